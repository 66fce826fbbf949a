// Command hello is the test workload of kubeup's end-to-end tests (image kubeup.dev/e2e/hello:v1): an HTTP
// server that answers GET /healthz with "ok" and every other path with "hello from HOSTNAME". It listens on
// -listen, or on :$PORT when PORT is set, else :8080, and exits 0 on SIGINT or SIGTERM. Built static
// (CGO_ENABLED=0): the image has no base.
//
// `hello get URL` is its client, for a test to run in the workload's container (which has no shell, no curl):
// it GETs URL and writes the body to stdout, and exits 1 when the GET fails or the answer is not 200 OK (the
// body, if any, still written), 2 when it is not given exactly one URL.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// getTimeout bounds a `hello get`: connecting, the answer and its body.
const getTimeout = 30 * time.Second

func main() {
	if len(os.Args) > 1 && os.Args[1] == "get" {
		os.Exit(getMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	addr := ":8080"
	if port := os.Getenv("PORT"); port != "" {
		addr = ":" + port
	}
	flag.StringVar(&addr, "listen", addr, "the address to listen on")
	flag.Parse()

	srv := &http.Server{Addr: addr, Handler: handler()}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Shutdown(context.Background())
	}()
	log.Printf("hello: listening on %s", addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// handler answers /healthz with "ok" and every other path with "hello from HOSTNAME".
func handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		host, err := os.Hostname()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "hello from %s\n", host)
	})
	return mux
}

// getMain is `hello get URL`: its exit code.
func getMain(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: hello get URL")
		return 2
	}
	if err := get(args[0], stdout); err != nil {
		fmt.Fprintln(stderr, "hello get:", err)
		return 1
	}
	return 0
}

// get writes the body of a GET of url to w: an error when the GET fails or its status is not 200 OK.
func get(url string, w io.Writer) error {
	client := http.Client{Timeout: getTimeout}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("reading the body of %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
