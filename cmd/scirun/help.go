package main

// --help: the flags grouped by the mode that uses them.

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// helpSections lists every flag under the mode that uses it, in the order --help prints them
// (check enforces the modes). A flag missing here is printed under "Other" and fails
// TestHelpListsEveryFlagOnce.
var helpSections = []struct {
	title string
	flags []string
}{
	{"Mode (choose one)", []string{"clear", "party", "local"}},
	{"Input and output (--clear, --local, client)", []string{"input", "output", "raw", "top", "strict"}},
	{"Secure session (--local, server, client)", []string{"backend", "ot", "offline-mib", "offline-he-mib", "offline-plans", "offline-dealt", "streams", "timeout", "net", "report"}},
	{"Server (--party 0; --session-timeout also --local)", []string{"listen", "serve", "max-sessions", "queue-timeout", "max-batch", "session-timeout",
		"hello-timeout", "join-timeout", "max-pending", "max-sessions-per-client", "sessions-per-minute", "drain-timeout",
		"metrics", "log-format"}},
	{"Client (--party 1)", []string{"connect", "connect-timeout"}},
	{"TLS (server and helper: --tls-self, or --tls-cert and --tls-key; client: --tls-pin or --tls-ca)", []string{"tls-self", "tls-cert",
		"tls-key", "tls-pin", "tls-ca", "tls-server-name", "tls-client-ca", "tls-client-pin", "tls-client-pins",
		"tls-client-cert", "tls-client-key", "tls-client-self"}},
	{"Three parties (--backend sci3: server and client --helper HOST:PORT --helper-tls-pin FP; the helper: --helper --listen ADDR --tls-self FILE)",
		[]string{"helper", "helper-tls-pin", "helper-tls-ca", "helper-insecure", "helper-prefetch", "helper-ahead", "helper-traces"}},
	{"Process (any mode)", []string{"quiet", "threads", "memory-limit", "cpuprofile"}},
}

// helpDefaults says the default of the flags whose default value is not the one to print: one
// that depends on the machine or the program, or a sentinel ("" prints none).
var helpDefaults = map[string]string{
	"party":           "",
	"max-sessions":    "the number of cores",
	"threads":         "all cores",
	"streams":         "2, or 1 on a single core",
	"backend":         "the program's",
	"memory-limit":    "none",
	"tls-server-name": "the host of --connect",
}

// printFlags writes the flags of fs by section: each as --name ARG, then its usage and its
// default, wrapped.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	listed := map[string]bool{}
	section := func(title string, names []string) {
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, name := range names {
			f := fs.Lookup(name)
			if f == nil {
				panic("scirun: help lists an unknown flag --" + name)
			}
			listed[name] = true
			arg, text := flag.UnquoteUsage(f)
			head := "  --" + name
			if arg != "" {
				head += " " + arg
			}
			fmt.Fprintln(w, head)
			if def, ok := helpDefaults[name]; ok {
				if def != "" {
					text += " (default: " + def + ")"
				}
			} else if d := defaultText(f); d != "" {
				text += " (default " + d + ")"
			}
			wrap(w, text, "        ", 100)
		}
	}
	for _, s := range helpSections {
		section(s.title, s.flags)
	}
	var other []string
	fs.VisitAll(func(f *flag.Flag) {
		if !listed[f.Name] {
			other = append(other, f.Name)
		}
	})
	if len(other) > 0 {
		section("Other", other)
	}
}

// defaultText is a flag's default as --help prints it: nothing for a zero value, strings quoted.
func defaultText(f *flag.Flag) string {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return ""
	}
	if _, ok := f.Value.(interface{ IsBoolFlag() bool }); ok {
		return f.DefValue
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if _, isString := g.Get().(string); isString {
			return fmt.Sprintf("%q", f.DefValue)
		}
	}
	return f.DefValue
}

// wrap writes text as lines of at most width columns, each starting with indent.
func wrap(w io.Writer, text, indent string, width int) {
	line := indent
	for _, word := range strings.Fields(text) {
		if line != indent && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
			fmt.Fprintln(w, line)
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += word
	}
	fmt.Fprintln(w, line)
}
