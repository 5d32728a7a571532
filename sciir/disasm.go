package sciir

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// Disasm decodes a program file and prints it readably: the file layout (sections, sizes,
// checksums), the header, the metadata, and the program in the IR's text form.
func Disasm(w io.Writer, b []byte) error {
	f, infos, err := unmarshal(b)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(w)
	p := f.Program
	fmt.Fprintf(out, "sciir version %d, %d bytes\n", binary.LittleEndian.Uint16(b[len(Magic):]), len(b))
	fmt.Fprintf(out, "program id %s\n", f.IDString())
	copyKind := "client copy (no weights)"
	if p.HasWeights() && len(p.Weights) > 0 {
		copyKind = "full copy (with party 0's weights)"
	}
	fmt.Fprintf(out, "%s, default backend %s\n", copyKind, f.Backend)
	fmt.Fprintf(out, "\nsections:\n")
	for _, s := range infos {
		fmt.Fprintf(out, "  %-4s at %8d  %9d bytes  crc32c %08x\n", s.Tag, s.Offset, s.Length, s.CRC)
	}
	if sum := f.Meta.summary(); sum != "" {
		fmt.Fprintf(out, "\nmetadata:\n")
		for _, line := range strings.Split(strings.TrimRight(sum, "\n"), "\n") {
			fmt.Fprintf(out, "  %s\n", line)
		}
	}
	fmt.Fprintln(out)
	if err := out.Flush(); err != nil {
		return err
	}
	return p.WriteText(w)
}
