package main

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// command is a -cmd option: the image ref's default arguments (its config's Cmd), which a container that gives
// none runs its entrypoint with. Upstream's agnhost image has ["pause"] (an agnhost pod with no args waits),
// busybox's ["sh"]; a Kubernetes container's args replace them.
type command struct {
	ref  name.Tag
	args []string
}

type commands []command

func (c *commands) String() string { return fmt.Sprint(len(*c), " commands") }

// Set parses REF=ARG[,ARG...].
func (c *commands) Set(v string) error {
	ref, args, ok := strings.Cut(v, "=")
	if !ok || args == "" {
		return fmt.Errorf("-cmd %q: want REF=ARG[,ARG...]", v)
	}
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("-cmd %q: %q is not a full image reference with a tag: %w", v, ref, err)
	}
	*c = append(*c, command{ref: tag, args: strings.Split(args, ",")})
	return nil
}

// withCommands gives each image its default arguments, before anything is written: refused, a -cmd of an image
// no -image names, or a second -cmd of one image.
func withCommands(images specs, cs commands) (specs, error) {
	out := append(specs(nil), images...)
	for _, c := range cs {
		found := false
		for i := range out {
			if out[i].ref.String() != c.ref.String() {
				continue
			}
			if out[i].cmd != nil {
				return nil, fmt.Errorf("-cmd %s: %s has default arguments already (%s)", c.ref, c.ref, strings.Join(out[i].cmd, ","))
			}
			out[i].cmd, found = c.args, true
		}
		if !found {
			return nil, fmt.Errorf("-cmd %s: no -image names %s: give its binaries with -image %s=FILE:PATH", c.ref, c.ref, c.ref)
		}
	}
	return out, nil
}
