package nodeup

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"kubeup.dev/kubeup/model"
)

// TestConfigReader: a ConfigReader (protokube's, read every round) opens its state store once and decodes the
// configuration only when the object's bytes change: the same bytes give the very configuration it decoded
// before; new bytes are decoded and checked as LoadConfig does, and a damaged copy is refused, never answered
// with the configuration it replaced.
func TestConfigReader(t *testing.T) {
	ctx := context.Background()
	first, second := nodeConfig(t, "control-plane-a"), nodeConfig(t, "nodes")
	damaged := append(append([]byte{}, first...), " "...)
	for _, b := range storeBackends {
		t.Run(b.scheme, func(t *testing.T) {
			var requests atomic.Int64
			storeURL := b.start(t, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1); h.ServeHTTP(w, r) })
			})
			conf := putConf(t, storeURL, "g", first)
			r, err := NewConfigReader(conf, Options{Err: io.Discard, ConfigWait: time.Millisecond, ConfigPollInterval: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			load := func(step string) *model.NodeConfig {
				t.Helper()
				nc, err := r.Load(ctx)
				if err != nil {
					t.Fatalf("%s: %v", step, err)
				}
				return nc
			}
			nc1 := load("first read")
			store := r.src.store
			requests.Store(0)
			if nc := load("the same bytes"); nc != nc1 {
				t.Error("the same bytes read again were decoded again")
			}
			if r.src.store != store {
				t.Error("the state store was opened again")
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("a read of the same bytes made %d requests, want 1 (the object's)", n)
			}

			putConf(t, storeURL, "g", second)
			nc2 := load("new bytes")
			if nc2 == nc1 || nc2.InstanceGroup.Metadata.Name != "nodes" {
				t.Errorf("after a new configuration, Load gave instance group %q, want nodes", nc2.InstanceGroup.Metadata.Name)
			}

			putConf(t, storeURL, "g", damaged)
			var ce *ConfigError
			if nc, err := r.Load(ctx); !errors.As(err, &ce) || nc != nil {
				t.Errorf("a damaged copy: %v, %v; want a *ConfigError and no configuration", nc, err)
			}

			putConf(t, storeURL, "g", first)
			if nc := load("the first bytes again"); nc.InstanceGroup.Metadata.Name != "control-plane-a" {
				t.Errorf("the first configuration again: instance group %q, want control-plane-a", nc.InstanceGroup.Metadata.Name)
			}
		})
	}
}
