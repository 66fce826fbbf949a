// Package nodeup is the node's side of kubeup: loading the node config, the local target (a filesystem root and
// systemd over D-Bus), and the pipeline that builds the node task graph and converges the machine.
//
// nodeup must not import cloudup, protokube or cmd.
package nodeup
