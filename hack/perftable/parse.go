package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// result is one benchmark's figures: the mean of each metric ("ns/op", "B/op", "allocs/op", and what
// b.ReportMetric added) over the runs the input holds of it (more than one with -count).
type result struct {
	Name    string             // without the -GOMAXPROCS suffix: "BenchmarkExecute/wide/n=1000"
	Pkg     string             // the import path of its package, from the "pkg:" line before it
	Runs    int                // how many result lines were averaged
	Iters   int64              // b.N of the last run
	Metrics map[string]float64 // unit -> mean value
}

// results are the benchmarks of `go test -bench` output, by name, and what the output says of the machine.
type results struct {
	byName map[string]*result
	order  []string        // names in input order
	failed map[string]bool // benchmarks with a "--- FAIL:" line
	CPU    string          // the "cpu:" line, if any
	GOOS   string
	GOARCH string
}

// get returns the benchmark name (without the -GOMAXPROCS suffix), or nil.
func (rs *results) get(name string) *result {
	if rs == nil {
		return nil
	}
	return rs.byName[name]
}

// procsSuffix is the "-N" that go test appends to a benchmark's name when GOMAXPROCS is not 1.
var procsSuffix = regexp.MustCompile(`-\d+$`)

// parse reads `go test -bench -benchmem` output, of one package or of several concatenated (the "pkg:" lines
// say which benchmark is whose). Lines that are not benchmark results (PASS, ok, logs) are skipped. A result
// line whose name was printed on a line of its own before (a benchmark that logged) is joined to it.
func parse(r io.Reader) (*results, error) {
	rs := &results{byName: map[string]*result{}, failed: map[string]bool{}}
	sums := map[string]map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	pkg, pending := "", ""
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "--- FAIL: "); ok && strings.HasPrefix(name, "Benchmark") {
			rs.failed[procsSuffix.ReplaceAllString(strings.Fields(name)[0], "")] = true
			continue
		}
		if k, v, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, "Benchmark") {
			switch k {
			case "pkg":
				pkg = strings.TrimSpace(v)
			case "cpu":
				rs.CPU = strings.TrimSpace(v)
			case "goos":
				rs.GOOS = strings.TrimSpace(v)
			case "goarch":
				rs.GOARCH = strings.TrimSpace(v)
			}
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		name := ""
		switch {
		case strings.HasPrefix(fields[0], "Benchmark") && len(fields) == 1:
			pending = fields[0] // its figures follow on a later line
			continue
		case strings.HasPrefix(fields[0], "Benchmark"):
			name, fields = fields[0], fields[1:]
		case pending != "" && isCount(fields[0]) && len(fields) >= 3 && len(fields)%2 == 1:
			name = pending
		default:
			continue
		}
		pending = ""
		if !isCount(fields[0]) || len(fields)%2 != 1 {
			continue // "BenchmarkX ... --- FAIL" and the like: no figures
		}
		iters, _ := strconv.ParseInt(fields[0], 10, 64)
		metrics := map[string]float64{}
		for i := 1; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: value %q of %q is not a number", lineNo, name, fields[i], fields[i+1])
			}
			metrics[fields[i+1]] = v
		}
		name = procsSuffix.ReplaceAllString(name, "")
		res := rs.byName[name]
		if res == nil {
			res = &result{Name: name, Pkg: pkg, Metrics: map[string]float64{}}
			rs.byName[name] = res
			rs.order = append(rs.order, name)
			sums[name] = map[string]float64{}
		}
		res.Runs++
		res.Iters = iters
		for unit, v := range metrics {
			sums[name][unit] += v
		}
		for unit, sum := range sums[name] {
			res.Metrics[unit] = sum / float64(res.Runs)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the benchmark output: %w", err)
	}
	return rs, nil
}

// isCount reports whether s is a benchmark's iteration count: digits only.
func isCount(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
