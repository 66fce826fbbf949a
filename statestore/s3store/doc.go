// Package s3store is the state store's s3:// scheme: s3://bucket/prefix, an S3 bucket or any S3-compatible
// server. It registers the scheme with statestore in its init, so a binary opens s3:// URLs when its main imports
// it:
//
//	import _ "kubeup.dev/kubeup/statestore/s3store"
//
// The statestore package documents the store's contract, its environment (AWS_*, KUBEUP_S3_PATH_STYLE) and how
// WriteIf is made atomic on S3. This package links the AWS SDK's core and its S3 client, no other AWS service
// (test/imports holds it to that); it imports statestore, internal/awssdk and internal/errclass of kubeup.
package s3store
