package fakecontrol

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// SetFaultsFlag sets a fake's faults from the JSON of its command's --faults flag ("" sets nothing).
func SetFaultsFlag[F any](value string, setFaults func(F) error) error {
	if value == "" {
		return nil
	}
	f, err := DecodeFaults[F](strings.NewReader(value))
	if err != nil {
		return err
	}
	return setFaults(f)
}

// Serve is the loop of the command of the fake called name: it serves h on listen, having printed
// "NAME listening on http://ADDRESS" on stdout, until SIGINT or SIGTERM. It returns the command's exit status.
func Serve(name, listen string, h http.Handler) int {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	fmt.Printf("%s listening on http://%s\n", name, l.Addr())
	srv := &http.Server{Handler: h}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}
