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
// making a second one. attempt counts the tokens found stale (see judgeToken): the first is 0.
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

// tokenFreshFor is how long before the create's answer (by the server's clock) a resource answered for a client
// token may have been made and still be taken for ours without reading it again: well beyond the time a new
// resource may stay absent from EC2's reads. An older one is read again (judgeToken).
const tokenFreshFor = 10 * time.Minute

// tokenVerdict is what the resource a create was answered with turns out to be.
type tokenVerdict int

const (
	// tokenOurs: the resource the create asks for, made now or by an earlier run that stopped after its create.
	tokenOurs tokenVerdict = iota
	// tokenStale: a resource an earlier use of the token made that is gone, going, or no longer the cluster's
	// (a cluster of this name deleted and made again, or the resource disowned): the next token is tried.
	tokenStale
	// tokenRead: the answer alone does not tell; read the resource again (tokenEvidence.Read) and ask again.
	tokenRead
)

// tokenEvidence is what a create's answer and, when needed, a read of the resource say.
type tokenEvidence struct {
	// State is the resource's state in the answer ("" when the resource has none, as a launch template).
	State string
	// Created is when the resource was made, and ServerTime the server's time of the answer (the response's Date
	// header); zero when unknown. The client's own clock is never compared with either.
	Created, ServerTime time.Time
	// Read is the resource as read again after the create; nil when not read.
	Read *tokenReadResult
}

// tokenReadResult is a resource as a read after the create found it.
type tokenReadResult struct {
	// Found: the read returned it. State and Tags are then its state and tags.
	Found bool
	State string
	Tags  map[string]string
}

// judgeToken decides what the resource a create with a client token was answered with is, from the resource
// itself rather than from this machine's clock:
//
//   - deleted or being deleted (in the answer or when read): stale;
//   - made within tokenFreshFor of the answer, by the server's clock: ours (a create of the same token and
//     parameters made it now, or in a run that just stopped; a read may not show it yet);
//   - older, or of unknown age: read again. It is ours when it exists, not going, and still carries the
//     cluster's ownership tag and its Name (name); it is stale when it is absent, going, or disowned (its
//     ownership tag removed or changed: the cluster no longer has it, and needs a new one).
//
// A resource deleted within tokenFreshFor of its making (a cluster of this name deleted and made again at once,
// with the same spec) is taken for ours until it is older: the create then reports it made, the next run's
// Find does not see it, and a run after tokenFreshFor moves to the next token.
func judgeToken(e tokenEvidence, cluster, name string) tokenVerdict {
	if deletedState(e.State) {
		return tokenStale
	}
	fresh := !e.Created.IsZero() && !e.ServerTime.IsZero() && e.ServerTime.Sub(e.Created) < tokenFreshFor
	if fresh {
		return tokenOurs
	}
	if e.Read == nil {
		return tokenRead
	}
	r := e.Read
	if !r.Found || deletedState(r.State) {
		return tokenStale
	}
	if r.Tags[ClusterTag(cluster)] != ownedValue || r.Tags["Name"] != name {
		return tokenStale
	}
	return tokenOurs
}

// deletedState reports whether state is one of a deleted resource, or of one being deleted.
func deletedState(state string) bool {
	switch strings.ToLower(state) {
	case "deleting", "deleted", "delete-in-progress", "delete-complete":
		return true
	}
	return false
}

// maxTokenAttempts bounds the tokens tried when earlier ones are stale.
const maxTokenAttempts = 5
