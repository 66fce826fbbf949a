package main

import (
	"testing"

	"kubeup.dev/kubeup/internal/golden"
)

// TestCLIReference keeps docs/cli.md in step with the commands: `make update-golden` rewrites it.
func TestCLIReference(t *testing.T) {
	golden.Assert(t, "../../docs/cli.md", append(cliReference(newRootCommand()), '\n'))
}
