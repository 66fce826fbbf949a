package main

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `hello get URL` prints the body of a hello server's answer and exits 0; a refused connection, an answer that is
// not 200 OK and a wrong number of arguments exit non-zero, saying why.
func TestGet(t *testing.T) {
	srv := httptest.NewServer(handler())
	defer srv.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "broken", http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	// A port that nothing listens on: one that was listened on, then closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/"
	l.Close()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string
		stderrSays string
	}{
		{"healthz", []string{srv.URL + "/healthz"}, 0, "ok\n", ""},
		{"root", []string{srv.URL + "/"}, 0, "hello from " + host + "\n", ""},
		{"not OK", []string{failing.URL}, 1, "broken\n", "503 Service Unavailable"},
		{"refused", []string{closed}, 1, "", "connection refused"},
		{"no URL", nil, 2, "", "usage: hello get URL"},
		{"two URLs", []string{srv.URL, srv.URL}, 2, "", "usage: hello get URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := getMain(tc.args, &stdout, &stderr)
			if code != tc.code || stdout.String() != tc.stdout || !strings.Contains(stderr.String(), tc.stderrSays) {
				t.Errorf("hello get %q: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr saying %q",
					tc.args, code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderrSays)
			}
		})
	}

	// The binary takes `get` as its first argument (the server's flags are not parsed) and exits with its code.
	bin := filepath.Join(t.TempDir(), "hello")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "get", srv.URL+"/healthz").Output()
	if err != nil || string(out) != "ok\n" {
		t.Errorf("hello get %s/healthz: %q, %v", srv.URL, out, err)
	}
	var exit *exec.ExitError
	if err := exec.Command(bin, "get", closed).Run(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("hello get %s (refused): %v, want exit status 1", closed, err)
	}
}
