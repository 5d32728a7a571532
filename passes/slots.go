package passes

import "github.com/cryptflow-go/cryptflow/ir/fixed"

// elemBytes is the storage size of one ring element in the VM (a uint64).
const elemBytes = 8

// Memory summarises tensor storage of a program, in bytes of ring elements (8 bytes each, a uint64).
type Memory struct {
	Tensors     int   // number of runtime tensors
	Slots       int   // number of slots after reuse
	NoReuse     int64 // every tensor in its own buffer
	WithReuse   int64 // the slots' total capacity
	PeakLive    int64 // the largest total size of tensors live at one instruction (a lower bound)
	WeightBytes int64 // party 0's weights as stored in the file (8 bytes per value)
}

// assignSlots assigns every tensor of p a storage slot so that tensors whose live ranges do not
// overlap share storage, and no instruction writes a slot it reads. It uses a best-fit greedy
// allocation in program order (a tensor's range runs from its defining instruction to its last
// reader). The result satisfies p.Validate's slot check. It is the pass table's "slots" pass.
func assignSlots(p *fixed.Program) Memory {
	def, last := p.LiveRanges()
	// Tensors no instruction defines are dropped by Compact; give any that remain a slot of their own.
	var capacity []int // elements per slot
	var free []int     // free slot ids
	dying := make(map[int][]int)
	for t := range p.Tensors {
		p.Tensors[t].Slot = -1
		if def[t] >= 0 {
			dying[last[t]] = append(dying[last[t]], t)
		}
	}
	for i, in := range p.Instrs {
		if in.Op != fixed.OpOutput {
			t := in.Out
			need := p.Tensors[t].Shape.Size()
			best := pickSlot(free, capacity, need)
			if best < 0 {
				p.Tensors[t].Slot = len(capacity)
				capacity = append(capacity, need)
			} else {
				s := free[best]
				free = append(free[:best], free[best+1:]...)
				p.Tensors[t].Slot = s
				capacity[s] = max(capacity[s], need)
			}
		}
		for _, t := range dying[i] {
			free = append(free, p.Tensors[t].Slot)
		}
	}
	for t := range p.Tensors {
		if p.Tensors[t].Slot < 0 {
			p.Tensors[t].Slot = len(capacity)
			capacity = append(capacity, p.Tensors[t].Shape.Size())
		}
	}
	return measureMemory(p)
}

// pickSlot returns the position in free of the smallest slot with at least need elements, or, if
// none is large enough, of the largest one (it grows least); -1 when free is empty.
func pickSlot(free, capacity []int, need int) int {
	fit, big := -1, -1
	for i, s := range free {
		c := capacity[s]
		if c >= need && (fit < 0 || c < capacity[free[fit]]) {
			fit = i
		}
		if big < 0 || c > capacity[free[big]] {
			big = i
		}
	}
	if fit >= 0 {
		return fit
	}
	return big
}

// measureMemory reports the storage of p: without reuse, with its slot assignment (if any), and the
// peak of simultaneously live tensors.
func measureMemory(p *fixed.Program) Memory {
	m := Memory{Tensors: len(p.Tensors)}
	slotCap := map[int]int{}
	for _, t := range p.Tensors {
		n := t.Shape.Size()
		m.NoReuse += int64(n) * elemBytes
		if t.Slot >= 0 {
			slotCap[t.Slot] = max(slotCap[t.Slot], n)
		}
	}
	if len(slotCap) == 0 {
		m.Slots = len(p.Tensors)
		m.WithReuse = m.NoReuse
	} else {
		m.Slots = len(slotCap)
		for _, c := range slotCap {
			m.WithReuse += int64(c) * elemBytes
		}
	}
	def, last := p.LiveRanges()
	for i := range p.Instrs {
		var live int64
		for t := range p.Tensors {
			if def[t] >= 0 && def[t] <= i && last[t] >= i {
				live += int64(p.Tensors[t].Shape.Size())
			}
		}
		m.PeakLive = max(m.PeakLive, live*elemBytes)
	}
	for _, w := range p.Weights {
		m.WeightBytes += int64(w.Shape.Size()) * 8
	}
	return m
}
