// Command fakegce serves internal/fakegce on one address: go run ./internal/fakegce/cmd/fakegce --listen 127.0.0.1:PORT.
// Point kubeup at it with KUBEUP_GCE_ENDPOINT=http://ADDRESS/ and the metadata clients with
// GCE_METADATA_HOST=ADDRESS. --faults sets the fault injection from the start (the JSON of POST /__fake/faults).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"kubeup.dev/kubeup/internal/fakegce"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	faults := flag.String("faults", "", `fault injection, as POST /__fake/faults takes it: {"rateLimitRate": 0.3, ...}`)
	flag.Parse()
	fake := fakegce.New()
	if *faults != "" {
		var f fakegce.Faults
		dec := json.NewDecoder(strings.NewReader(*faults))
		dec.DisallowUnknownFields()
		err := dec.Decode(&f)
		if err == nil {
			err = fake.SetFaults(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "fakegce: --faults: %v\n", err)
			os.Exit(2)
		}
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakegce: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("fakegce listening on http://%s\n", l.Addr())
	srv := &http.Server{Handler: fake}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "fakegce: %v\n", err)
		os.Exit(1)
	}
}
