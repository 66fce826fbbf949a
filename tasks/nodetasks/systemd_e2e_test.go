//go:build e2e

package nodetasks

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kubeup.dev/kubeup/engine"
	"kubeup.dev/kubeup/engine/enginetest"
	"kubeup.dev/kubeup/internal/e2e"
)

// sleeper is a unit that runs until stopped, reading an environment file.
func sleeper(name string) string {
	return "[Unit]\nDescription=kubeup e2e " + name + "\n\n[Service]\nEnvironmentFile=/etc/kubeup-e2e/" + name +
		".env\nExecStart=/bin/sleep infinity\n\n[Install]\nWantedBy=multi-user.target\n"
}

// services is two services, each depending on its own environment file.
func services(envA, envB string) func() *engine.Graph[*Node] {
	return func() *engine.Graph[*Node] {
		g := engine.NewGraph[*Node]()
		a := engine.Add(g, &File{Path: "/etc/kubeup-e2e/a.env", Contents: ptr(envA)})
		b := engine.Add(g, &File{Path: "/etc/kubeup-e2e/b.env", Contents: ptr(envB)})
		engine.Add(g, &SystemdService{Name: "a.service", Definition: ptr(sleeper("a")), Enabled: ptr(true), Running: ptr(true),
			DropIns: map[string]string{"10-kubeup.conf": "[Service]\nEnvironment=KUBEUP=1\n"}, DependsOn: []engine.Task{a}})
		engine.Add(g, &SystemdService{Name: "b.service", Definition: ptr(sleeper("b")), Enabled: ptr(true), Running: ptr(true),
			DependsOn: []engine.Task{b}})
		return g
	}
}

// Real systemd in a container, reached from the host through /proc/PID/root/run/systemd/private: units are
// written, enabled and started; a second run restarts nothing; a changed dependency restarts only its service;
// a unit that fails to start is reported with its state and journal.
func TestSystemdServiceE2E(t *testing.T) {
	e2e.RequireTools(t, "journalctl")
	c := e2e.Boot(t)
	ctx := context.Background()
	n, err := NewNode(ctx, c.Root(), NodeOptions{}) // finds the container's systemd by itself
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.Systemd == nil {
		t.Fatalf("NewNode(%s): no systemd connection", c.Root())
	}

	enginetest.ApplyThenNoChanges(t, ctx, n, services("X=1\n", "Y=1\n"))
	for _, unit := range []string{"a.service", "b.service"} {
		if got := c.Show(t, unit, "UnitFileState"); got != "enabled" {
			t.Errorf("%s: UnitFileState %q, want enabled", unit, got)
		}
		if got := c.Show(t, unit, "ActiveState"); got != "active" {
			t.Errorf("%s: ActiveState %q, want active", unit, got)
		}
	}
	if got := c.Show(t, "a.service", "Environment"); got != "KUBEUP=1" {
		t.Errorf("a.service: Environment %q, want the drop-in's KUBEUP=1", got)
	}
	invA, invB := c.Show(t, "a.service", "InvocationID"), c.Show(t, "b.service", "InvocationID")

	t.Run("a second run restarts nothing", func(t *testing.T) {
		res, err := engine.Run(ctx, services("X=1\n", "Y=1\n")(), n, engine.Options{Target: engine.Apply})
		if err != nil || !res.Plan.Empty() {
			t.Fatalf("second run: %v, changes %v", err, res.Plan.Changes)
		}
		if c.Show(t, "a.service", "InvocationID") != invA || c.Show(t, "b.service", "InvocationID") != invB {
			t.Error("a second run restarted a service")
		}
	})

	t.Run("a changed dependency restarts only its service", func(t *testing.T) {
		dry, err := engine.Run(ctx, services("X=1\n", "Y=2\n")(), n, engine.Options{Target: engine.DryRun})
		if err != nil {
			t.Fatal(err)
		}
		var report bytes.Buffer
		dry.Plan.WriteText(&report)
		if !strings.Contains(report.String(), "+ File//etc/kubeup-e2e/b.env sha256:"+hashString("Y=2\n")[:16]) ||
			strings.Contains(report.String(), "a.service") {
			t.Errorf("the dry run should announce b.service's changed input, and nothing of a.service:\n%s", report.String())
		}
		if _, err := engine.Run(ctx, services("X=1\n", "Y=2\n")(), n, engine.Options{Target: engine.Apply}); err != nil {
			t.Fatal(err)
		}
		if got := c.Show(t, "a.service", "InvocationID"); got != invA {
			t.Error("a.service restarted, but only b.service's dependency changed")
		}
		if got := c.Show(t, "b.service", "InvocationID"); got == invB {
			t.Error("b.service did not restart after its dependency changed")
		}
		if got := c.Show(t, "b.service", "ActiveState"); got != "active" {
			t.Errorf("b.service: ActiveState %q after the restart", got)
		}
		invB = c.Show(t, "b.service", "InvocationID")
	})

	t.Run("a changed unit is reloaded and restarted", func(t *testing.T) {
		g := services("X=1\n", "Y=2\n")()
		svc, _ := g.Lookup(engine.Key{Type: "SystemdService", Name: "a.service"})
		svc.(*SystemdService).DropIns["10-kubeup.conf"] = "[Service]\nEnvironment=KUBEUP=2\n"
		if _, err := engine.Run(ctx, g, n, engine.Options{Target: engine.Apply}); err != nil {
			t.Fatal(err)
		}
		if got := c.Show(t, "a.service", "Environment"); got != "KUBEUP=2" {
			t.Errorf("a.service: Environment %q after the drop-in changed, want KUBEUP=2 (reloaded?)", got)
		}
		if c.Show(t, "a.service", "InvocationID") == invA || c.Show(t, "b.service", "InvocationID") != invB {
			t.Error("want a.service restarted and b.service not")
		}
		if got := c.Show(t, "a.service", "NeedDaemonReload"); got != "no" {
			t.Errorf("a.service: NeedDaemonReload %q", got)
		}
	})

	t.Run("a failed start is reported with its journal", func(t *testing.T) {
		g := engine.NewGraph[*Node]()
		engine.Add(g, &SystemdService{Name: "broken.service", Running: ptr(true),
			Definition: ptr("[Service]\nExecStart=/bin/sh -c 'echo kubeup-e2e-broken-unit; exit 3'\n")})
		_, err := engine.Run(ctx, g, n, engine.Options{Target: engine.Apply})
		var runErr *engine.RunError
		if !errors.As(err, &runErr) || len(runErr.Failed) != 1 {
			t.Fatalf("want one failed task, got %v", err)
		}
		msg := err.Error()
		for _, want := range []string{"SystemdService/broken.service", "ActiveState=failed", "Result=exit-code",
			"last journal lines", "kubeup-e2e-broken-unit"} {
			if !strings.Contains(msg, want) {
				t.Errorf("the error does not say %q:\n%s", want, msg)
			}
		}
		if engine.ClassOf(runErr.Failed[0].Err) != engine.ClassTerminal {
			t.Errorf("a failed start should be terminal: %v", engine.ClassOf(runErr.Failed[0].Err))
		}
	})

	t.Run("a unit past its start limit starts once its binary is there", func(t *testing.T) {
		// One start allowed per minute: after a failed start, systemd refuses the next one ("start request
		// repeated too quickly") until the failed state is reset. The unit does not change (a changed unit would
		// reset the limit on reload); its missing binary appears, as when an operator fixes the image.
		const binary = "/usr/local/bin/kubeup-e2e-limited"
		build := func() *engine.Graph[*Node] {
			g := engine.NewGraph[*Node]()
			engine.Add(g, &SystemdService{Name: "limited.service", Running: ptr(true),
				Definition: ptr("[Unit]\nStartLimitIntervalSec=60\nStartLimitBurst=1\n[Service]\nExecStart=" + binary + "\n")})
			return g
		}
		if _, err := engine.Run(ctx, build(), n, engine.Options{Target: engine.Apply}); err == nil {
			t.Fatal("a unit without its binary started")
		}
		if got := c.Show(t, "limited.service", "ActiveState"); got != "failed" {
			t.Fatalf("limited.service: ActiveState %q after a failed start, want failed", got)
		}
		if err := os.WriteFile(filepath.Join(c.Root(), binary), []byte("#!/bin/sh\nexec sleep infinity\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Run(ctx, build(), n, engine.Options{Target: engine.Apply}); err != nil {
			t.Fatalf("the unit did not start once its binary was there: %v", err)
		}
		if got := c.Show(t, "limited.service", "ActiveState"); got != "active" {
			t.Errorf("limited.service: ActiveState %q, want active", got)
		}
	})
}
