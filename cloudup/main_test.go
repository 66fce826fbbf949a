package cloudup

import (
	"os"
	"testing"
)

// noKubeconfig is the kubeconfig the tests' updates read unless a test sets its own: a file that is not there, so
// that no test reaches a cluster of the machine's own kubeconfig, and every update's addons wait for the same
// reason.
const noKubeconfig = "/nonexistent/kubeup-tests/kubeconfig"

func TestMain(m *testing.M) {
	os.Setenv(EnvKubeconfig, noKubeconfig)
	os.Exit(m.Run())
}
