package pkitasks_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/tasks/pkitasks"
)

func runToken(t *testing.T, w *world, target engine.Target) (*keypair, *engine.Plan, error) {
	t.Helper()
	g := engine.NewGraph[*world]()
	k := engine.Add(g, &keypair{Name: "bootstrap-token", Dir: dir, Usage: pkitasks.UsageToken, Status: pkitasks.Valid})
	res, err := engine.Run(context.Background(), g, w, engine.Options{Target: target})
	if res == nil {
		return k, nil, err
	}
	return k, res.Plan, err
}

// TestTokenIssuedOnceAndKept: a bootstrap token is made once (<6>.<16> of [a-z0-9], from crypto/rand), stored as
// one line, read back as it is by the next run (no change), never printed; an object that is not a token is
// refused and left as it is.
func TestTokenIssuedOnceAndKept(t *testing.T) {
	w := newWorld()
	k, p, err := runToken(t, w, engine.Apply)
	if err != nil || len(p.Changes) != 1 {
		t.Fatalf("first run: %v, %d changes", err, len(p.Changes))
	}
	stored := w.store.Objects[dir+"/bootstrap-token"]
	if !regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}\n$`).MatchString(stored) {
		t.Fatalf("stored token %q is not <id>.<secret>", stored)
	}
	if k.Issued == nil || k.Issued.Token.Reveal()+"\n" != stored {
		t.Fatal("the task's output is not the stored token")
	}
	id, secret, ok := k.Issued.TokenParts()
	if !ok || id != stored[:6] || secret.Reveal() != stored[7:23] {
		t.Fatalf("TokenParts: %q %q %t", id, secret.Reveal(), ok)
	}
	var text strings.Builder
	if err := p.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), stored[7:23]) {
		t.Fatalf("the plan shows the token's secret:\n%s", text.String())
	}
	k2, p, err := runToken(t, w, engine.Apply)
	if err != nil || !p.Empty() || k2.Issued.Token.Reveal() != k.Issued.Token.Reveal() {
		t.Fatalf("second run: %v, %d changes; the token must be kept", err, len(p.Changes))
	}
	w.store.Objects[dir+"/bootstrap-token"] = "not a token\n"
	if _, _, err := runToken(t, w, engine.Apply); err == nil || !strings.Contains(err.Error(), "cannot be read") {
		t.Fatalf("a malformed token: %v", err)
	}
	if w.store.Objects[dir+"/bootstrap-token"] != "not a token\n" {
		t.Fatal("the malformed object was replaced")
	}
}
