// Command fakeaws serves internal/fakeaws on one address: go run ./internal/fakeaws/cmd/fakeaws --listen 127.0.0.1:PORT.
// Point the SDK at it with AWS_ENDPOINT_URL=http://ADDRESS, the AWS CLI with --endpoint-url http://ADDRESS.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"kubeup.dev/kubeup/internal/fakeaws"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	flag.Parse()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeaws: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("fakeaws listening on http://%s\n", l.Addr())
	srv := &http.Server{Handler: fakeaws.New()}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "fakeaws: %v\n", err)
		os.Exit(1)
	}
}
