// Command fakegce serves internal/fakegce on one address: go run ./internal/fakegce/cmd/fakegce --listen 127.0.0.1:PORT.
// Point kubeup at it with KUBEUP_GCE_ENDPOINT=http://ADDRESS/ and the metadata clients with
// GCE_METADATA_HOST=ADDRESS. --faults sets the fault injection from the start (the JSON of POST /__fake/faults).
package main

import (
	"flag"
	"fmt"
	"os"

	"kubeup.dev/kubeup/internal/fakecontrol"
	"kubeup.dev/kubeup/internal/fakegce"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	faults := flag.String("faults", "", `fault injection, as POST /__fake/faults takes it: {"rateLimitRate": 0.3, ...}`)
	flag.Parse()
	fake := fakegce.New()
	if err := fakecontrol.SetFaultsFlag(*faults, fake.SetFaults); err != nil {
		fmt.Fprintf(os.Stderr, "fakegce: --faults: %v\n", err)
		os.Exit(2)
	}
	os.Exit(fakecontrol.Serve("fakegce", *listen, fake))
}
