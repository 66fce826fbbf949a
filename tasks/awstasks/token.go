package awstasks

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// clientToken is the idempotency token of a create: derived from what is created (the cluster, the resource's
// name, and whatever else makes it another create), so that a create repeated after a crash, by this process or
// another, asks for the same thing with the same token and AWS answers with what the first call made instead of
// making a second one. attempt counts the tokens found stale (see staleToken): the first is 0.
func clientToken(attempt int, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p)))) // length-prefixed: ("ab","c") and ("a","bc") differ
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	h.Write([]byte("#" + strconv.Itoa(attempt)))
	return "kubeup-" + hex.EncodeToString(h.Sum(nil))[:48]
}

// tokenReuseAge is how old a resource answered for a client token must be to show that the token was used by
// an earlier life of the cluster: a create that this run's Find did not see, yet answered with a resource made
// that long ago, got the answer of a token used before (a cluster deleted and made again under the same name),
// not a create repeated after a crash (whose resource Find sees once AWS's reads have caught up, well within
// this time).
const tokenReuseAge = time.Hour

// staleToken reports whether a create answered with a resource made at created (nil: unknown) and in state
// state answered for a token an earlier, deleted resource used.
func staleToken(created *time.Time, state string, now time.Time) bool {
	switch strings.ToLower(state) {
	case "deleting", "deleted", "delete-in-progress", "delete-complete":
		return true
	}
	return created != nil && now.Sub(*created) > tokenReuseAge
}

// maxTokenAttempts bounds the tokens tried when earlier ones are stale.
const maxTokenAttempts = 5
