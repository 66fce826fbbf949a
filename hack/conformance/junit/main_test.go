package main

import (
	"strings"
	"testing"
)

// A report as e2e.test --report-dir writes it (ginkgo v2's JUnit, failure messages omitted): the suite's nodes
// (not specs: counted only when they fail), specs that passed, failed, timed out, were interrupted, skipped at run
// time, and left out by the focus.
const report = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="7" disabled="3" errors="1" failures="2" time="12.5">
  <testsuite name="Kubernetes e2e suite" package="/e2e" tests="7" disabled="0" skipped="3" errors="1" failures="2" time="12.5">
    <testcase name="[SynchronizedBeforeSuite]" classname="Kubernetes e2e suite" status="passed" time="1"></testcase>
    <testcase name="[ReportAfterSuite] Kubernetes e2e suite report" classname="Kubernetes e2e suite" status="passed" time="0"></testcase>
    <testcase name="[SynchronizedAfterSuite]" classname="Kubernetes e2e suite" status="failed" time="1">
      <failure message="" type="failed">[FAILED] cleanup</failure>
    </testcase>
    <testcase name="[sig-node] Pods should get a host IP [NodeConformance] [Conformance]" classname="Kubernetes e2e suite" status="passed" time="3"></testcase>
    <testcase name="[sig-network] DNS should provide DNS for the cluster [Conformance]" classname="Kubernetes e2e suite" status="failed" time="5">
      <failure message="" type="failed">[FAILED] dig found no answer</failure>
    </testcase>
    <testcase name="[sig-network] Services should serve a basic endpoint from pods [Conformance]" classname="Kubernetes e2e suite" status="timedout" time="5">
      <failure message="" type="timedout">[TIMEDOUT]</failure>
    </testcase>
    <testcase name="[sig-apps] Deployment deployment should support rollover [Conformance]" classname="Kubernetes e2e suite" status="interrupted" time="1">
      <error message="" type="interrupted">interrupted by user</error>
    </testcase>
    <testcase name="[sig-network] Services should be able to create a functioning NodePort service [Conformance]" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped - Requires at least 2 nodes (not 1)"></skipped>
    </testcase>
    <testcase name="[sig-storage] CSI Mock volume expansion" classname="Kubernetes e2e suite" status="skipped" time="0">
      <skipped message="skipped"></skipped>
    </testcase>
  </testsuite>
</testsuites>`

func TestCount(t *testing.T) {
	c, err := count(strings.NewReader(report))
	if err != nil {
		t.Fatal(err)
	}
	if c.passed != 1 || c.failed != 4 || c.skipped != 1 || c.unselected != 1 {
		t.Errorf("passed %d, failed %d, skipped %d, not in the focus %d; want 1, 4, 1, 1", c.passed, c.failed, c.skipped, c.unselected)
	}
	want := []string{
		"[SynchronizedAfterSuite] (failed)",
		"[sig-network] DNS should provide DNS for the cluster [Conformance] (failed)",
		"[sig-network] Services should serve a basic endpoint from pods [Conformance] (timedout)",
		"[sig-apps] Deployment deployment should support rollover [Conformance] (interrupted)",
	}
	if strings.Join(c.failures, "\n") != strings.Join(want, "\n") {
		t.Errorf("failures:\n%s\nwant:\n%s", strings.Join(c.failures, "\n"), strings.Join(want, "\n"))
	}
	if len(c.skips) != 1 || !strings.HasSuffix(c.skips[0], "(Requires at least 2 nodes (not 1))") {
		t.Errorf("skips: %q", c.skips)
	}
}

// Something that is not a JUnit report is refused, not counted as nothing.
func TestCountRefused(t *testing.T) {
	for _, in := range []string{"", "not xml", `{"json": true}`} {
		if c, err := count(strings.NewReader(in)); err == nil {
			t.Errorf("count(%q) = %+v, want an error", in, c)
		}
	}
}
