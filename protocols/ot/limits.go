package ot

// Lambda is the computational security parameter (bits) and the IKNP width.
const Lambda = 128

// MaxN is the largest N of a 1-out-of-N OT.
const MaxN = 256

// MaxWidth is the largest number of words per instance in the Wide calls.
const MaxWidth = 1 << 16
