package localtasks

import (
	"testing"
	"time"
)

// A node killed between its losetup and the claim that records the device (found by protokube's
// TestProtokubeSIGKILLMidRound) leaves its claim without a device and the image bound: Attached says "not
// attached", so that the next round's Attach completes the claim with that device, without a second losetup.
// Before, Attached reported the bound device, the round had nothing to do, and the claim never named its device.
func TestVolumesClaimWithoutDeviceButBound(t *testing.T) {
	m := newMachine(t, "v")
	a := m.node(t, "node-a", time.Minute)
	now := m.clock.now()
	if err := a.pool.writeClaim("v", &claimRecord{NodeID: "node-a", Since: now, Renewed: now, Lease: "1m0s"}); err != nil {
		t.Fatal(err)
	}
	dev, err := m.loops.attach(t.Context(), m.img("v")) // the losetup of the killed Attach
	if err != nil {
		t.Fatal(err)
	}
	if got := attached(t, a, "v"); got != "" {
		t.Errorf("Attached = %q with a claim that names no device, want \"\" (the next Attach completes the claim)", got)
	}
	if got := mustAttach(t, a, "v"); got != dev || m.loops.attaches != 1 {
		t.Errorf("Attach gave %s after %d losetups, want %s, bound already, after 1", got, m.loops.attaches, dev)
	}
	if c, _ := a.pool.readClaim("v"); c.Device != dev {
		t.Errorf("claim records device %q, want %q", c.Device, dev)
	}
	if got := attached(t, a, "v"); got != dev {
		t.Errorf("Attached = %q once the claim is complete, want %q", got, dev)
	}
}
