package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// This file holds what the subcommands share: running both parties in this process and
// connecting them.

// netFlagHelp documents the -net flag of every subcommand.
const netFlagHelp = "emulated network: none, " + netmodel.Help + "; each party's connections share its link"

// parseFlags parses a subcommand's args into fs; the subcommands take no positional arguments.
// It returns errUsage after a mistake (flag has already described it).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(fs.Output(), "unexpected arguments: %v\n", fs.Args())
		fs.Usage()
		return errUsage
	}
	return nil
}

// pairOptions are the connection options of party 0 and party 1. With an
// emulated link each party has its own downlink, shared by all of its
// connections (as the streams of a real session share the machine's link).
type pairOptions struct{ p0, p1 transport.Options }

// transportOptions returns the connection options for the -net link (see
// netmodel.Parse) with the given timeout.
func transportOptions(netName string, timeout time.Duration) (pairOptions, error) {
	o := transport.Options{Timeout: timeout}
	m, err := netmodel.Parse(netName)
	if err != nil {
		return pairOptions{}, fmt.Errorf("-net: %w", err)
	}
	po := pairOptions{o, o}
	if m != nil {
		po.p0.Link, po.p1.Link = transport.NewLink(*m), transport.NewLink(*m)
	}
	return po, nil
}

// transportName describes the connections for a report header.
func transportName(pipe bool) string {
	if pipe {
		return "in-memory pipes"
	}
	return "loopback TCP"
}

// inParallel runs f0 (party 0) and f1 (party 1) in two goroutines and returns the first error.
func inParallel(f0, f1 func() error) error {
	var e0, e1 error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); e0 = f0() }()
	go func() { defer wg.Done(); e1 = f1() }()
	wg.Wait()
	if e0 != nil {
		return fmt.Errorf("party 0: %w", e0)
	}
	if e1 != nil {
		return fmt.Errorf("party 1: %w", e1)
	}
	return nil
}

// connectPair connects party 0 and party 1 over loopback TCP (or an in-memory pipe).
func connectPair(ctx context.Context, pipe bool, opt pairOptions) (*transport.Conn, *transport.Conn, error) {
	if pipe {
		a, b := net.Pipe()
		return transport.NewConn(a, opt.p0), transport.NewConn(b, opt.p1), nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	var c0, c1 *transport.Conn
	if err := inParallel(func() (err error) { c0, err = transport.Accept(ctx, ln, opt.p0); return },
		func() (err error) { c1, err = transport.Dial(ctx, ln.Addr().String(), opt.p1); return }); err != nil {
		if c0 != nil {
			c0.Close()
		}
		if c1 != nil {
			c1.Close()
		}
		return nil, nil, err
	}
	return c0, c1, nil
}
