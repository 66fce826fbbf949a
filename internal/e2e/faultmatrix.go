package e2e

import (
	"fmt"
	"sync"
	"testing"
)

// FaultCell is one cell of a cloud's fault matrix: the share of calls the cloud pushes back (throttles, rate
// limits) and the share it fails with a 5xx, whether it is eventually consistent, and whether attaching is slow.
// What each means in a fake is the cloud test's to say.
type FaultCell struct {
	PushedBack, ServerErrors float64
	Consistency, SlowAttach  bool
}

// FaultMatrix runs run for every cell of the matrix, pushed back share x server errors share x consistency x
// attach speed ({0, 10%} x {0, 5%} with one seed; {0, 30%} x {0, 10%} with three under KUBEUP_SOAK), each cell a
// subtest named with pushback (the cloud's word: "throttle", "ratelimit"). The cells run at once, at most 16: a
// cell spends its time waiting out retries, not on the CPU; they are started from goroutines rather than as
// t.Parallel subtests, so that go test's -parallel (GOMAXPROCS) does not queue them.
func FaultMatrix(t *testing.T, pushback string, run func(t *testing.T, c FaultCell, seed uint64)) {
	pushed, serverErrors, seeds := []float64{0, 0.1}, []float64{0, 0.05}, []uint64{1}
	if Soak() {
		pushed, serverErrors, seeds = []float64{0, 0.3}, []float64{0, 0.1}, []uint64{1, 2, 3}
	}
	var cells []FaultCell
	for _, p := range pushed {
		for _, e := range serverErrors {
			for _, consistency := range []bool{false, true} {
				for _, slowAttach := range []bool{false, true} {
					cells = append(cells, FaultCell{p, e, consistency, slowAttach})
				}
			}
		}
	}
	var wg sync.WaitGroup
	running := make(chan struct{}, 16)
	for i, c := range cells {
		for _, seed := range seeds {
			wg.Go(func() {
				running <- struct{}{}
				defer func() { <-running }()
				t.Run(fmt.Sprintf("%s/seed=%d", c.name(pushback), seed), func(t *testing.T) { run(t, c, uint64(i)*100+seed) })
			})
		}
	}
	wg.Wait()
}

func (c FaultCell) name(pushback string) string {
	onOff := func(b bool, on, off string) string {
		if b {
			return on
		}
		return off
	}
	return fmt.Sprintf("%s=%.0f%%/5xx=%.0f%%/%s/%s", pushback, 100*c.PushedBack, 100*c.ServerErrors,
		onOff(c.Consistency, "eventual", "consistent"), onOff(c.SlowAttach, "slow-attach", "fast-attach"))
}
