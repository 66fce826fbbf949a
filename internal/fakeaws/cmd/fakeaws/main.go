// Command fakeaws serves internal/fakeaws on one address: go run ./internal/fakeaws/cmd/fakeaws --listen 127.0.0.1:PORT.
// Point the SDK at it with AWS_ENDPOINT_URL=http://ADDRESS, the AWS CLI with --endpoint-url http://ADDRESS.
// --faults sets the fault injection from the start (the JSON of POST /__fake/faults); --change-pending-polls makes
// Route53 changes PENDING for that many GetChange calls.
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

	"kubeup.dev/kubeup/internal/fakeaws"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	faults := flag.String("faults", "", `fault injection, as POST /__fake/faults takes it: {"throttleRate": 0.3, ...}`)
	pendingPolls := flag.Int("change-pending-polls", 0, "GetChange calls that answer PENDING before INSYNC")
	flag.Parse()
	fake := fakeaws.New()
	fake.SetChangePendingPolls(*pendingPolls)
	if *faults != "" {
		var f fakeaws.Faults
		dec := json.NewDecoder(strings.NewReader(*faults))
		dec.DisallowUnknownFields()
		err := dec.Decode(&f)
		if err == nil {
			err = fake.SetFaults(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "fakeaws: --faults: %v\n", err)
			os.Exit(2)
		}
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fakeaws: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("fakeaws listening on http://%s\n", l.Addr())
	srv := &http.Server{Handler: fake}
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
