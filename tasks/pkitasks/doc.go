// Package pkitasks holds the keystore's task, Keypair: a private key and its certificate kept in the state store
// under the cluster (one object each, written in one write), issued by kubeup with crypto/x509 from the standard
// library, and issued again when its certificate nears its end or no longer says what the spec asks. A CA is
// never replaced by a run. Keys are ECDSA P-256 (see NewKey for why).
//
// Private keys travel in engine.Secret values: reports, logs, JSON plans and errors show them as (sensitive).
//
// It imports engine, storetasks and the standard library only.
package pkitasks
