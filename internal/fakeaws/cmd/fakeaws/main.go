// Command fakeaws serves internal/fakeaws on one address: go run ./internal/fakeaws/cmd/fakeaws --listen 127.0.0.1:PORT.
// Point the SDK at it with AWS_ENDPOINT_URL=http://ADDRESS, the AWS CLI with --endpoint-url http://ADDRESS.
// --faults sets the fault injection from the start (the JSON of POST /__fake/faults); --change-pending-polls makes
// Route53 changes PENDING for that many GetChange calls.
package main

import (
	"flag"
	"fmt"
	"os"

	"kubeup.dev/kubeup/internal/fakeaws"
	"kubeup.dev/kubeup/internal/fakecontrol"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to serve on")
	faults := flag.String("faults", "", `fault injection, as POST /__fake/faults takes it: {"throttleRate": 0.3, ...}`)
	pendingPolls := flag.Int("change-pending-polls", 0, "GetChange calls that answer PENDING before INSYNC")
	flag.Parse()
	fake := fakeaws.New()
	fake.SetChangePendingPolls(*pendingPolls)
	if err := fakecontrol.SetFaultsFlag(*faults, fake.SetFaults); err != nil {
		fmt.Fprintf(os.Stderr, "fakeaws: --faults: %v\n", err)
		os.Exit(2)
	}
	os.Exit(fakecontrol.Serve("fakeaws", *listen, fake))
}
