// Package gsstore is the state store's gs:// scheme: gs://bucket/prefix, a Google Cloud Storage bucket. It
// registers the scheme with statestore in its init, so a binary opens gs:// URLs when its main imports it:
//
//	import _ "kubeup.dev/kubeup/statestore/gsstore"
//
// The statestore package documents the store's contract, its environment (STORAGE_EMULATOR_HOST, the
// application default credentials) and how WriteIf is made atomic on GCS. This package imports statestore and
// internal/errclass of kubeup.
package gsstore
