#!/usr/bin/env python3
"""Random fixed-point weights/input for OpenCheetah's networks/main_{sqnet,resnet50}.cpp.

usage: gen-net-inputs.py NET SRC_MAIN_CPP OUTDIR [SEED]
writes OUTDIR/NET_model_random_scale12.inp   (what the SERVER, r=1, reads from stdin)
       OUTDIR/NET_input_random_scale12.inp   (what the CLIENT, r=2, reads from stdin)

The tensors, their order, shapes and reader (SERVER/CLIENT) are parsed from the generated
main file (every `make_array<uint64_t>(dims)` followed by the "Variable to read the clear
value" comment and a `cin >>`/`gINPUT>>` loop guarded by party == SERVER|CLIENT). The role of
each tensor is found from its first use after StartComputation() (USE_FUSED_BN=1 branches).

Values (real numbers, written as round(x * 2^12) decimal integers, negatives with '-', which
`cin >> uint64_t` wraps mod 2^64 exactly as for the shipped *_scale12.inp files):
  client image : integer pixel U{0..255} minus the per-channel mean of the shipped input
                 (sqnet BGR 104/117/123, resnet50 RGB 123.68/116.78/103.94) -> [-124, 151]
  conv/FC weights : N(0, 1/fan_in)   (fan_in = kh*kw*ci, or 2048 for the FC)
  biases (sqnet conv, resnet FC)      : N(0, 0.05^2)
  BN scale : U[0.5, 1.0]; BN offset : N(0, 0.05^2)
  BN mean / variance (read but unused by the Cheetah mains) : N(0, 0.05^2) / U[0.5, 1.5]
"""
import random
import re
import sys

SCALE = 1 << 12


def parse(path):
    src = open(path).read()
    start = src.index('StartComputation();')
    body = re.sub(r'#else.*?#endif', '', src[start:], flags=re.S)  # USE_FUSED_BN == 1
    pat = re.compile(r'uint64_t \*(tmp\d+)\s*=\s*make_array<uint64_t>\(([^;]*)\);\s*'
                     r'/\* Variable to read the clear value corresponding to the input '
                     r'variable (tmp\d+)', re.S)
    out = []
    for m in pat.finditer(src[:start]):
        name = m.group(1)
        assert name == m.group(3)
        dims = [int(x) for x in re.findall(r'(\d+)', m.group(2).replace('(int32_t)', ''))]
        nxt = src[m.end():m.end() + 3000]
        who = re.search(r'party == (SERVER|CLIENT)', nxt).group(1)
        u = re.search(r'\n\s*(\w+)\(([^;]*?)\b' + name + r'\b', body)
        role = None
        if u:
            fn = u.group(1)
            call = re.search(r'\n\s*' + fn + r'\(([^;]*)\);', body[u.start():])
            args = [a.strip() for a in call.group(1).replace('\n', ' ').split(',')]
            role = (fn, args.index(name))
        out.append((name, who, dims, role))
    return out


def main():
    net, main_cpp, outdir = sys.argv[1:4]
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    rng = random.Random(seed)
    tensors = parse(main_cpp)
    means = {'sqnet': (104.0, 117.0, 123.0), 'resnet50': (123.68, 116.78, 103.94)}[net]
    server, client = [], []
    unused = 0
    for name, who, dims, role in tensors:
        n = 1
        for d in dims:
            n *= d
        if who == 'CLIENT':
            assert len(dims) == 4 and dims[3] == 3
            vals = [round((rng.randrange(256) - means[i % 3]) * SCALE) for i in range(n)]
            client.append(vals)
            continue
        if len(dims) == 4:                         # conv filter [kh, kw, ci, co]
            std = (1.0 / (dims[0] * dims[1] * dims[2])) ** 0.5
            vals = [round(rng.gauss(0.0, std) * SCALE) for _ in range(n)]
        elif len(dims) == 2:                       # FC weight [in, out]
            std = (1.0 / dims[0]) ** 0.5
            vals = [round(rng.gauss(0.0, std) * SCALE) for _ in range(n)]
        elif role is None:                         # unused BN mean / variance
            if unused % 2 == 0:
                vals = [round(rng.gauss(0.0, 0.05) * SCALE) for _ in range(n)]
            else:
                vals = [round(rng.uniform(0.5, 1.5) * SCALE) for _ in range(n)]
            unused += 1
        elif role in (('FusedBatchNorm4411', 5), ('FusedBN', 15)):   # BN scale
            vals = [round(rng.uniform(0.5, 1.0) * SCALE) for _ in range(n)]
        elif role in (('FusedBatchNorm4411', 6), ('FusedBN', 16), ('ScaleUp1', 1)):  # bias
            vals = [round(rng.gauss(0.0, 0.05) * SCALE) for _ in range(n)]
        else:
            raise SystemExit('unknown role %s for %s %s' % (role, name, dims))
        server.append(vals)
    ns = sum(len(v) for v in server)
    nc = sum(len(v) for v in client)
    for fname, arrs in ((f'{outdir}/{net}_model_random_scale12.inp', server),
                        (f'{outdir}/{net}_input_random_scale12.inp', client)):
        with open(fname, 'w') as f:
            for v in arrs:
                f.write(' '.join(map(str, v)))
                f.write('\n')
    print(f'{net}: {len(tensors)} tensors; server reads {ns} ints, client reads {nc} ints; seed {seed}')


if __name__ == '__main__':
    main()
