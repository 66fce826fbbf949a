// Package storecheck holds what the clouds' reliability tests (test/aws, test/gce) check of a cluster's state
// store after a run, whole or killed.
package storecheck

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"kubeup.dev/kubeup/model"
)

// Problems returns what is wrong with the objects of one cluster's state (keys relative to its
// directory, at url): a temporary object (a segment starting with a dot, or named like a temporary file), an
// empty one, a spec that does not decode, a node configuration whose content does not match its sha256, a PEM
// object that does not decode whole, and, when the last run ended (rather than was killed), a lock left behind.
func Problems(url string, objs map[string][]byte, ended bool) []string {
	var problems []string
	for _, key := range slices.Sorted(maps.Keys(objs)) {
		data := objs[key]
		where := url + "/" + key
		switch base := path.Base(key); {
		case slices.ContainsFunc(strings.Split(key, "/"), func(s string) bool { return strings.HasPrefix(s, ".") }) ||
			strings.Contains(base, ".tmp") || strings.HasSuffix(base, "~"):
			problems = append(problems, where+": a temporary object left behind")
		case key == "lock" && ended:
			problems = append(problems, where+": the lock is still there after the run ended")
		case key == "lock": // a killed run's: the next run takes it over
		case len(data) == 0:
			problems = append(problems, where+": empty")
		case key == "config":
			if _, err := model.Decode(where, data); err != nil {
				problems = append(problems, fmt.Sprintf("%s: does not decode: %v", where, err))
			}
		case strings.HasPrefix(key, "nodeup/") && strings.HasSuffix(key, ".role"):
			// A role's configuration is read whole with each group's that names it, below.
		case strings.HasPrefix(key, "nodeup/"):
			beside := func(name string) (string, []byte, error) {
				data, ok := objs[path.Join(path.Dir(key), name)]
				if !ok {
					return url + "/nodeup/" + name, nil, fs.ErrNotExist
				}
				return url + "/nodeup/" + name, data, nil
			}
			_, err := model.DecodeNodeConfigObject(where, data, beside)
			var sumErr *model.NodeConfigSumError
			if err != nil && (ended || !errors.As(err, &sumErr) || sumErr.PinnedBy == "") {
				// A run killed between writing a role's configuration and its groups' leaves them out of step
				// (the next run writes them again); a run that ended never does.
				problems = append(problems, fmt.Sprintf("%s: torn: %v", where, err))
			}
		case bytes.HasPrefix(data, []byte("-----BEGIN ")):
			rest := data
			for {
				var b *pem.Block
				if b, rest = pem.Decode(rest); b == nil {
					break
				}
			}
			if len(bytes.TrimSpace(rest)) != 0 {
				problems = append(problems, fmt.Sprintf("%s: PEM with %d bytes it cannot decode (truncated?)", where, len(rest)))
			}
		}
	}
	return problems
}
