package main

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestExportKubeconfig runs `kubeup export kubeconfig` before and after the cluster is applied, into the first
// file of $KUBECONFIG: what it prints names the file, the context and the certificate's end, and never the key.
func TestExportKubeconfig(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "s")
	const name = "demo.example.com"
	t.Setenv("HOME", filepath.Join(base, "home"))
	kubeconfig := filepath.Join(base, "kube", "config")
	t.Setenv("KUBECONFIG", kubeconfig+string(filepath.ListSeparator)+filepath.Join(base, "second"))

	mustKubeup(t, state, "create", "cluster", "--name", name, "--cloud", "local", "--zones", "a")
	_, _, err := kubeup(t, state, "export", "kubeconfig", name)
	if err == nil || !strings.Contains(err.Error(), "run `kubeup update cluster "+name+" --yes` first") {
		t.Fatalf("export before update --yes: %v, want to be told to run it", err)
	}
	if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
		t.Errorf("a refused export wrote the kubeconfig: %v", err)
	}
	if _, _, err := kubeup(t, state, "export", "kubeconfig", "absent.example.com"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("export of a missing cluster: %v", err)
	}
	mustKubeup(t, state, "update", "cluster", name, "--yes")

	var printed strings.Builder
	for _, args := range [][]string{
		{"export", "kubeconfig", name},
		{"export", "kubeconfig", name, "--admin=1h", "-v"},
		{"export", "kubeconfig", name, "--admin"},
	} {
		out, stderr, err := kubeup(t, state, args...)
		if err != nil {
			t.Fatalf("kubeup %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		printed.WriteString(out + stderr)
		for _, want := range []string{"Wrote kubeconfig " + kubeconfig, "context " + name, "user " + name + "-admin", "server https://api." + name, "is valid until 20"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubeup %s printed:\n%s\nwant %q", strings.Join(args, " "), out, want)
			}
		}
	}

	// The key of the last export, as the file holds it: neither it nor any key's PEM was printed.
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var kc struct {
		Users []struct {
			User struct {
				Key string `json:"client-key-data"`
			} `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(data, &kc); err != nil || len(kc.Users) != 1 {
		t.Fatalf("the kubeconfig: %v, %d users, want 1", err, len(kc.Users))
	}
	keyPEM, err := base64.StdEncoding.DecodeString(kc.Users[0].User.Key)
	if err != nil || !strings.Contains(string(keyPEM), "PRIVATE KEY") {
		t.Fatalf("client-key-data: %v", err)
	}
	body := strings.Split(strings.TrimSpace(string(keyPEM)), "\n")[1] // a line of the key's base64
	for _, secret := range []string{"PRIVATE KEY", body, kc.Users[0].User.Key[80:140]} {
		if strings.Contains(printed.String(), secret) {
			t.Errorf("export printed %q", secret)
		}
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "kubeconfig", name, "--admin", "2h"}, "--admin takes its value after '=': --admin=2h"},
		{[]string{"export", "kubeconfig", name, "--admin=0s"}, "want a duration above 0"},
		{[]string{"export", "kubeconfig", name, "--admin=8760h"}, "at most 720h0m0s"},
		{[]string{"export", "kubeconfig"}, "needs the cluster's name: kubeup export kubeconfig NAME, or --name NAME"},
	} {
		if _, _, err := kubeup(t, state, tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("kubeup %s: %v, want %q", strings.Join(tt.args, " "), err, tt.want)
		}
	}
	if after, _ := os.ReadFile(kubeconfig); string(after) != string(data) {
		t.Error("a refused export changed the kubeconfig")
	}
}
