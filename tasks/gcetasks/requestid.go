package gcetasks

import (
	"crypto/sha256"
	"fmt"
	"strconv"
)

// requestID is the idempotency key of a create (GCE's requestId, a UUID): derived from what is created (the
// cluster, the resource's kind and name, and whatever else makes it another create), so that a create repeated
// after a crash, by this process or another, sends the same id and GCE answers with the first call's operation
// instead of making a second resource. attempt counts the ids found spent (their resource deleted since, a
// cluster of the name made again): the first is 0.
func requestID(attempt int, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p)))) // length-prefixed: ("ab","c") and ("a","bc") differ
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	h.Write([]byte("#" + strconv.Itoa(attempt)))
	b := h.Sum(nil)[:16]
	b[6] = b[6]&0x0f | 0x50 // version 5 (name-based, SHA)
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// maxRequestAttempts bounds the request ids tried when earlier ones are spent.
const maxRequestAttempts = 5
