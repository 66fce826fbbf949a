//go:build e2e

package e2e

import (
	"strings"
	"testing"
)

// TestStartBIND checks, with dig as the referee, that the server answers for its zone and that its key may
// transfer the zone while a query without the key may not.
func TestStartBIND(t *testing.T) {
	b := StartBIND(t, "Demo.Example.COM.")
	RequireTools(t, "dig")
	host, port, _ := strings.Cut(b.Addr, ":")
	soa := MustRun(t, "dig", "@"+host, "-p", port, "+short", "+tcp", "demo.example.com", "SOA")
	if !strings.HasPrefix(soa, "ns.demo.example.com. hostmaster.demo.example.com. 1 ") {
		t.Errorf("dig SOA: %q", soa)
	}
	key := "-y" + b.KeyAlgorithm + ":" + b.KeyName + ":" + b.KeySecret
	axfr := MustRun(t, "dig", "@"+host, "-p", port, key, "demo.example.com", "AXFR")
	if !strings.Contains(axfr, "ns.demo.example.com.\t300\tIN\tA\t"+host) {
		t.Errorf("dig AXFR with the key:\n%s", axfr)
	}
	refused := MustRun(t, "dig", "@"+host, "-p", port, "demo.example.com", "AXFR")
	if !strings.Contains(refused, "Transfer failed") {
		t.Errorf("dig AXFR without the key:\n%s", refused)
	}
}
