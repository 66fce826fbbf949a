// Package kubetest is a fake kube-apiserver for tests: the shapes of the API's answers that kubetasks reads
// (GET of an object, a list by label selector, server-side apply with managedFields, DELETE, /version), over
// TLS with a client certificate, behind the real kubetasks.Client. Tests of kubetasks, cloudup and whatever
// applies objects through kubetasks use it.
//
// It is for tests only: no product package imports it (test/imports holds the rule).
package kubetest
