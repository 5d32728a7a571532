package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// This file holds what the subcommands share: running both parties in this process and
// connecting them.

// netFlagHelp documents the -net flag of every subcommand.
const netFlagHelp = "emulated network: none, lan (377 MB/s, 0.3 ms RTT) or wan (40 MB/s, 80 ms RTT)"

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

// transportOptions returns the connection options for the -net model name ("none", "lan" or
// "wan") with the given timeout.
func transportOptions(netName string, timeout time.Duration) (transport.Options, error) {
	opt := transport.Options{Timeout: timeout}
	switch netName {
	case "none":
	case "lan":
		m := transport.LAN()
		opt.Net = &m
	case "wan":
		m := transport.WAN()
		opt.Net = &m
	default:
		return opt, fmt.Errorf("-net %q: want none, lan or wan", netName)
	}
	return opt, nil
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
func connectPair(ctx context.Context, pipe bool, opt transport.Options) (*transport.Conn, *transport.Conn, error) {
	if pipe {
		a, b := transport.Pipe(opt)
		return a, b, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("listen: %w", err)
	}
	defer ln.Close()
	var c0, c1 *transport.Conn
	if err := inParallel(func() (err error) { c0, err = transport.Accept(ctx, ln, opt); return },
		func() (err error) { c1, err = transport.Dial(ctx, ln.Addr().String(), opt); return }); err != nil {
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
