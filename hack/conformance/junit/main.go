// Command junit counts the specs of the JUnit report the upstream e2e test binary writes (e2e.test --report-dir:
// junit_01.xml, ginkgo v2's format), for make conformance:
//
//	junit REPORT.xml
//
// prints the name of each spec that failed (a <failure> or an <error>: failed, timed out, aborted, panicked,
// interrupted) and of each skipped at run time (Skip(REASON): "skipped - REASON"), then one line
// "N passed, N failed, N skipped" (and how many specs the focus left out: ginkgo lists every spec, and those it
// did not select are <skipped message="skipped">). The suite's own nodes ([SynchronizedBeforeSuite], ...) are
// not specs: they count only when they fail. It exits 1 when anything failed or no spec passed, 2 when the
// report cannot be read.
package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// suiteNode is the name ginkgo gives a node of the suite rather than a spec.
var suiteNode = regexp.MustCompile(`^\[(Synchronized)?(Before|After)Suite\]|^\[Report(Before|After)Suite\]|^\[DeferCleanup \(Suite\)\]`)

type testSuites struct {
	Suites []testSuite `xml:"testsuite"`
}

type testSuite struct {
	Cases []testCase `xml:"testcase"`
}

type testCase struct {
	Name    string   `xml:"name,attr"`
	Status  string   `xml:"status,attr"`
	Skipped *message `xml:"skipped"`
	Failure *message `xml:"failure"`
	Error   *message `xml:"error"`
}

type message struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
}

// counts is what a report holds.
type counts struct {
	passed, failed, skipped, unselected int
	failures, skips                     []string
}

// count reads a report: a <testsuites> of <testsuite>s, or one <testsuite>.
func count(r io.Reader) (counts, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return counts{}, err
	}
	var suites testSuites
	if err := xml.Unmarshal(b, &suites); err != nil {
		return counts{}, fmt.Errorf("not a JUnit report: %w", err)
	}
	if len(suites.Suites) == 0 {
		var one testSuite
		if err := xml.Unmarshal(b, &one); err != nil {
			return counts{}, fmt.Errorf("not a JUnit report: %w", err)
		}
		suites.Suites = []testSuite{one}
	}
	var c counts
	for _, s := range suites.Suites {
		for _, tc := range s.Cases {
			switch {
			case tc.Failure != nil || tc.Error != nil:
				c.failed++
				kind := tc.Status
				if kind == "" && tc.Failure != nil {
					kind = tc.Failure.Type
				} else if kind == "" {
					kind = tc.Error.Type
				}
				c.failures = append(c.failures, fmt.Sprintf("%s (%s)", tc.Name, kind))
			case suiteNode.MatchString(tc.Name):
				// Passed or skipped: not a spec.
			case tc.Skipped != nil && (tc.Skipped.Message == "skipped" || tc.Skipped.Message == "pending"):
				c.unselected++
			case tc.Skipped != nil:
				c.skipped++
				c.skips = append(c.skips, fmt.Sprintf("%s (%s)", tc.Name, strings.TrimPrefix(tc.Skipped.Message, "skipped - ")))
			default:
				c.passed++
			}
		}
	}
	return c, nil
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: junit REPORT.xml")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err == nil {
		defer f.Close()
	}
	var c counts
	if err == nil {
		c, err = count(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "junit: %s: %v\n", os.Args[1], err)
		os.Exit(2)
	}
	for _, s := range c.failures {
		fmt.Println("FAILED:", s)
	}
	for _, s := range c.skips {
		fmt.Println("SKIPPED:", s)
	}
	fmt.Printf("%d passed, %d failed, %d skipped (%d specs not in the focus)\n", c.passed, c.failed, c.skipped, c.unselected)
	if c.failed > 0 || c.passed == 0 {
		os.Exit(1)
	}
}
