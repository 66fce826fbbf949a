package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputNeedsDryRun: on the commands whose -o is the format of what --dry-run prints (create cluster, create
// instancegroup), -o without --dry-run was ignored and the object written: whoever asked for JSON expected a
// preview and got a write. It is refused, the error says to add --dry-run, and nothing is written (not even a
// file:// store's directory).
func TestOutputNeedsDryRun(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	before := treeSums(t, state)
	for _, args := range [][]string{
		{"create", "ig", "g2", "--name", name, "-o", "json"},
		{"create", "instancegroup", "g2", "--name", name, "--output", "yaml"},
		{"create", "cluster", "y.example.com", "--cloud", "local", "--zones", "a", "-o", "json"},
		{"create", "cluster", "y.example.com", "--cloud", "local", "--zones", "a", "-o", "yaml"},
	} {
		out, _, err := kubeup(t, state, args...)
		if err == nil || exitCode(err) != 1 {
			t.Errorf("kubeup %s: %v, want refused with exit status 1\n%s", strings.Join(args, " "), err, out)
			continue
		}
		for _, want := range []string{"-o " + args[len(args)-1], "only with --dry-run", "add --dry-run", "nothing was changed"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("kubeup %s: %v, want it to say %q", strings.Join(args, " "), err, want)
			}
		}
		if out != "" {
			t.Errorf("kubeup %s printed %q", strings.Join(args, " "), out)
		}
	}
	if after := treeSums(t, state); !sameSums(before, after) {
		t.Errorf("the refused commands changed the state store:\nbefore %v\nafter  %v", before, after)
	}

	// A store that does not exist yet is not made either.
	fresh := filepath.Join(t.TempDir(), "fresh")
	if _, _, err := kubeup(t, fresh, "create", "cluster", "y.example.com", "--cloud", "local", "--zones", "a", "-o", "json"); err == nil {
		t.Error("create cluster -o json without --dry-run in a new store: no error")
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("the refused create cluster made the store's directory %s (%v)", fresh, err)
	}

	// With --dry-run, -o is what it prints, and nothing is written.
	for _, args := range [][]string{
		{"create", "ig", "g2", "--name", name, "--dry-run", "-o", "json"},
		{"create", "cluster", "y.example.com", "--cloud", "local", "--zones", "a", "--dry-run", "-o", "json"},
	} {
		out := mustKubeup(t, state, args...)
		if !json.Valid([]byte(out)) {
			t.Errorf("kubeup %s printed no JSON:\n%s", strings.Join(args, " "), out)
		}
	}
	// Without -o, the write happens as before.
	mustKubeup(t, state, "create", "ig", "g2", "--name", name)
	if after := treeSums(t, state); sameSums(before, after) {
		t.Error("create ig g2 without -o wrote nothing")
	}
}

// TestTargetDryRunWithYes: update cluster --target dryrun --yes exited 0 after a dry run whose plan ended with
// "Must specify --yes to apply changes", although --yes was given. The contradiction is refused before anything
// is read or changed; --target dryrun alone is a dry run, and --yes alone applies.
func TestTargetDryRunWithYes(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	before := treeSums(t, state)
	for _, args := range [][]string{
		{"update", "cluster", name, "--target", "dryrun", "--yes"},
		{"update", "cluster", name, "--target=dryrun", "-y", "-o", "json"},
	} {
		out, _, err := kubeup(t, state, args...)
		if exitCode(err) != 1 || out != "" {
			t.Fatalf("kubeup %s: %v, printed %q; want refused, nothing printed", strings.Join(args, " "), err, out)
		}
		for _, want := range []string{"--target dryrun only shows the changes and --yes applies them", "kubeup update cluster " + name + " --yes", "nothing was changed"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("kubeup %s: %v, want it to say %q", strings.Join(args, " "), err, want)
			}
		}
	}
	if after := treeSums(t, state); !sameSums(before, after) {
		t.Error("the refused update changed the state store")
	}
	if out := mustKubeup(t, state, "update", "cluster", name, "--target", "dryrun"); !strings.Contains(out, "Must specify --yes to apply changes") {
		t.Errorf("update --target dryrun: want a dry run, got:\n%s", out)
	}
	if after := treeSums(t, state); !sameSums(before, after) {
		t.Error("update --target dryrun changed the state store")
	}
}

// TestLockFlagMistakes: a negative --lock-timeout was taken as 0 (wait until interrupted), and --force-unlock
// without --yes was ignored (only --yes takes the lock). Both are refused on update, delete and rolling-update
// (with rolling-update's negative --validation-timeout and --interval), before anything is read; --force-unlock
// with --yes takes over a lock of another machine.
func TestLockFlagMistakes(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s")
	const name = "demo.example.com"
	mustKubeup(t, state, "create", "cluster", name, "--cloud", "local", "--zones", "a")
	before := treeSums(t, state)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"update", "cluster", name, "--lock-timeout", "-1s"}, []string{"--lock-timeout -1s", "cannot be negative", "0 to wait until interrupted", "nothing was changed"}},
		{[]string{"update", "cluster", name, "--yes", "--lock-timeout=-5m"}, []string{"--lock-timeout -5m0s", "cannot be negative"}},
		{[]string{"delete", "cluster", name, "--yes", "--lock-timeout", "-1s"}, []string{"--lock-timeout -1s", "cannot be negative"}},
		{[]string{"update", "cluster", name, "--force-unlock", "0123abcd"}, []string{"--force-unlock 0123abcd", "only --yes takes the lock", "add --yes to take over lock 0123abcd and apply the changes", "nothing was changed"}},
		{[]string{"delete", "cluster", name, "--force-unlock", "0123abcd"}, []string{"add --yes to take over lock 0123abcd and delete the cluster"}},
		{[]string{"rolling-update", "cluster", name, "--force-unlock", "0123abcd"}, []string{"add --yes to take over lock 0123abcd and replace the machines"}},
		{[]string{"rolling-update", "cluster", name, "--yes", "--lock-timeout", "-1s"}, []string{"--lock-timeout -1s", "cannot be negative"}},
		{[]string{"rolling-update", "cluster", name, "--yes", "--validation-timeout", "-1s"}, []string{"--validation-timeout -1s", "cannot be negative", "nothing was changed"}},
		{[]string{"rolling-update", "cluster", name, "--interval", "-1s"}, []string{"--interval -1s", "cannot be negative"}},
		{[]string{"update", "cluster", name, "--yes", "--force"}, []string{"--force goes with --force-unlock ID", "nothing was changed"}},
		{[]string{"delete", "cluster", name, "--yes", "--force"}, []string{"--force goes with --force-unlock ID"}},
	} {
		out, _, err := kubeup(t, state, c.args...)
		if exitCode(err) != 1 || out != "" {
			t.Errorf("kubeup %s: %v, printed %q; want refused, nothing printed", strings.Join(c.args, " "), err, out)
			continue
		}
		for _, want := range c.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("kubeup %s: %v, want it to say %q", strings.Join(c.args, " "), err, want)
			}
		}
	}
	if after := treeSums(t, state); !sameSums(before, after) {
		t.Errorf("the refused commands changed the state store:\nbefore %v\nafter  %v", before, after)
	}

	// A lock left by a run on another machine: --force-unlock with its ID and --yes takes it over, and the apply
	// releases it at its end.
	lock := filepath.Join(state, name, "lock")
	held := `{"id":"0123abcd","operation":"update --yes","holder":"someone@elsewhere","pid":42,"since":"2026-01-02T03:04:05Z"}`
	if err := os.WriteFile(lock, []byte(held), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := kubeup(t, state, "update", "cluster", name, "--yes", "--lock-timeout", "0s", "--force-unlock", "0123abcd"); err != nil ||
		!strings.Contains(stderr, "Took over the lock of cluster "+name) {
		t.Fatalf("update --yes --force-unlock: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("the lock is left after the apply (%v)", err)
	}
}
