package nodeup

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// onNote is stderr that calls do once, when nodeup prints a line containing note.
type onNote struct {
	w    bytes.Buffer
	note string
	do   func()
	done bool
}

func (o *onNote) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if !o.done && strings.Contains(o.w.String(), o.note) {
		o.done = true
		o.do()
	}
	return n, err
}

const waitNote = ": content does not match its sha256 (a copy still being written?): waiting up to "

// TestConfigWait: a node that reads its configuration while it is still being copied (truncated, or not yet
// matching its sha256) waits for a complete one, whatever --retries says: it takes the complete copy when it
// arrives, and refuses the configuration with a *ConfigError once the wait is over. Nothing under the root
// changes until a complete configuration is read.
func TestConfigWait(t *testing.T) {
	obj := nodeConfig(t, "nodes")
	changed := bytes.Clone(obj)
	changed[len(changed)/2] ^= 0x01

	for _, tt := range []struct {
		name    string
		partial []byte
	}{
		{"truncated", obj[:len(obj)/3]},
		{"half a first line", obj[:12]},
		{"empty", nil},
		{"one byte changed", changed},
	} {
		t.Run(tt.name+": refused after the wait", func(t *testing.T) {
			conf := writeConf(t, t.TempDir(), "nodes", tt.partial)
			root := t.TempDir()
			before := treeHash(t, root)
			r := run(t, Options{Conf: conf, Root: root, Retries: -1, RetryBackoff: time.Millisecond,
				ConfigWait: 20 * time.Millisecond, ConfigPollInterval: time.Millisecond})
			var ce *ConfigError
			if !errors.As(r.runErr, &ce) {
				t.Fatalf("Run error = %v, want a *ConfigError", r.runErr)
			}
			for _, want := range []string{"node configuration " + conf + ": ", "still so after waiting 20ms", "kubeup update cluster --yes"} {
				if !strings.Contains(r.runErr.Error(), want) {
					t.Errorf("error:\n%v\nwant it to contain %q", r.runErr, want)
				}
			}
			wantNote := "nodeup: node configuration " + conf + waitNote + "20ms for a complete one\n"
			if r.err != wantNote {
				t.Errorf("stderr:\n%s\nwant exactly:\n%s", r.err, wantNote)
			}
			if got := treeHash(t, root); got != before {
				t.Errorf("the tree changed:\n%s", got)
			}
		})

		t.Run(tt.name+": completed during the wait", func(t *testing.T) {
			conf := writeConf(t, t.TempDir(), "nodes", tt.partial)
			root := t.TempDir()
			stderr := &onNote{note: waitNote, do: func() {
				// The copy completes, atomically as kubeup's store and a careful boot script write it.
				tmp := conf + ".tmp"
				if err := os.WriteFile(tmp, obj, 0o600); err != nil {
					t.Error(err)
				}
				if err := os.Rename(tmp, conf); err != nil {
					t.Error(err)
				}
			}}
			var out bytes.Buffer
			// Retries 0: waiting for a complete configuration is not a retry.
			err := Run(context.Background(), Options{Conf: conf, Root: root, Out: &out, Err: stderr,
				Logger:     testLogger(t),
				ConfigWait: time.Hour, ConfigPollInterval: time.Millisecond})
			if err != nil {
				t.Fatalf("Run: %v\nstderr:\n%s", err, &stderr.w)
			}
			if !stderr.done {
				t.Errorf("nodeup did not say it waits:\n%s", &stderr.w)
			}
			if !strings.Contains(stderr.w.String(), "waiting up to 1h for a complete one\n") {
				t.Errorf("stderr:\n%s\nwant the wait's bound, 1h", &stderr.w)
			}
			if !strings.HasPrefix(out.String(), "Applied ") {
				t.Errorf("stdout:\n%s\nwant the applied changes", &out)
			}
			if _, err := os.Stat(filepath.Join(root, "etc/systemd/system/kubelet.service")); err != nil {
				t.Error(err)
			}
		})
	}

	t.Run("cancelled while waiting", func(t *testing.T) {
		conf := writeConf(t, t.TempDir(), "nodes", obj[:100])
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stderr := &onNote{note: waitNote, do: cancel}
		err := Run(ctx, Options{Conf: conf, Root: t.TempDir(), Err: stderr, Logger: testLogger(t),
			ConfigWait: time.Hour, ConfigPollInterval: time.Hour})
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "waiting for a complete node configuration") {
			t.Fatalf("Run error = %v, want it to say it was waiting and to wrap context.Canceled", err)
		}
	})

	t.Run("default bound", func(t *testing.T) {
		o := Options{}
		o.defaults()
		if o.ConfigWait != 2*time.Minute || DefaultConfigWait != 2*time.Minute {
			t.Errorf("ConfigWait defaults to %v (DefaultConfigWait %v), want 2m", o.ConfigWait, DefaultConfigWait)
		}
	})
}

var _ io.Writer = (*onNote)(nil)
