// Package kubetasks holds the task for an object kept in a Kubernetes cluster, Object (found with GET, converged
// with server-side apply under kubeup's field manager), and Client, the small HTTPS client of kube-apiserver it
// and protokube's CSR approver use: plain net/http and TLS client certificates, no client-go.
//
// It imports engine, sigs.k8s.io/yaml and the standard library only: nothing from cloudup, model, nodeup or
// protokube.
package kubetasks
