package staticpods

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// proc is a Process that StartProcess started, in a process group of its own.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // Wait's, once done is closed
}

// StartProcess starts cmd in a process group of its own (Stop signals the group), its output appended to
// logFile. When the process exits, what is left of its group is killed.
func StartProcess(cmd *exec.Cmd, logFile string) (Process, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", strings.Join(cmd.Args, " "), err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		close(p.done)
	}()
	return p, nil
}

func (p *proc) PID() int              { return p.cmd.Process.Pid }
func (p *proc) Done() <-chan struct{} { return p.done }

func (p *proc) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

func (p *proc) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	if grace > 0 {
		syscall.Kill(-p.PID(), syscall.SIGTERM)
		select {
		case <-p.done:
			return p.err
		case <-time.After(grace):
		}
	}
	syscall.Kill(-p.PID(), syscall.SIGKILL)
	<-p.done
	return p.err
}
