// relu-bench: time OpenCheetah's secure ReLU (ReLURingProtocol::relu, the protocol object that
// OpenCheetah's library Relu() / funcReLUThread uses in the *-cheetah network builds, compiled with
// SCI_OT=1 USE_CHEETAH=1 so that sci::OTPack is the Ferret silent-OT pack of cheetah-ot_pack.h).
// A benchmark driver linked against OpenCheetah's SCI; not part of OpenCheetah.
//
//   relu-bench r=1 p=41000 N=1048576 mode=exact & relu-bench r=2 p=41000 N=1048576 mode=exact
//
// mode=exact : relu(..., approx=false): millionaire on l-1 bits + multiplexer (exact ReLU).
// mode=approx: relu(..., approx=true), what library_fixed_uniform.cpp's Relu() passes in the
//              networks: drops the k low bits (kScale) and compares on a reduced ring
//              (Maeng & Suh); inputs are then drawn with |x| < 2^(l-4) and checked with tolerance
//              |x| < 2^k around zero.
// 1 thread, one NetIO on port p. Timed parts:
//   setup_ms : OTPack construction (Ferret setup: base OTs/pre-OT generation, the first Ferret
//              extension via its warm-up rcot) + ReLURingProtocol construction;
//   relu_ms  : relu() after a one-byte barrier (includes further Ferret extensions on demand).
// Verification (ALICE sends its shares to BOB) is outside both timers.
#include "NonLinear/relu-ring.h"
#include "utils/ArgMapping/ArgMapping.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <vector>

int32_t bitlength = 32;
int32_t kScale = 12;

using namespace std;
using clk = std::chrono::steady_clock;
static double ms_since(clk::time_point t) {
  return std::chrono::duration<double, std::milli>(clk::now() - t).count();
}

int main(int argc, char **argv) {
  auto t_main = clk::now();
  int party = 0, port = 41000, N = 1 << 20, reps = 1, seed = 12345, keep = 0;
  string mode = "exact", ip = "127.0.0.1";
  ArgMapping amap;
  amap.arg("r", party, "Role of party: ALICE = 1; BOB = 2");
  amap.arg("p", port, "port");
  amap.arg("N", N, "number of ReLUs");
  amap.arg("l", bitlength, "ring bit length");
  amap.arg("k", kScale, "fixed-point scale (only used by mode=approx)");
  amap.arg("mode", mode, "exact | approx");
  amap.arg("reps", reps, "timed ReLU repetitions in this process (fresh inputs reused)");
  amap.arg("ip", ip, "address of ALICE");
  amap.arg("seed", seed, "seed for the (shared) test-input generator");
  amap.arg("keep", keep, "1: delete the OTPack at exit so Ferret saves its pre-OT data to ./data/ (next run's setup reuses it)");
  amap.parse(argc, argv);
  const bool approx = (mode == "approx");
  const int l = bitlength;
  const uint64_t mask = (l == 64) ? ~0ULL : ((1ULL << l) - 1);

  sci::NetIO *io = new sci::NetIO(party == sci::ALICE ? nullptr : ip.c_str(), port, true);
  auto t_conn = clk::now();

  // ---- setup (Ferret silent OT) ----
  uint64_t c_setup0 = io->counter, r_setup0 = io->num_rounds;
  auto t_setup = clk::now();
  sci::OTPack<sci::NetIO> *otpack = new sci::OTPack<sci::NetIO>(io, party);
  double otpack_ms = ms_since(t_setup);
  auto *relu = new ReLURingProtocol<sci::NetIO, uint64_t>(party, RING, io, l, MILL_PARAM, otpack);
  io->flush();
  double setup_ms = ms_since(t_setup);
  uint64_t setup_bytes = io->counter - c_setup0, setup_rounds = io->num_rounds - r_setup0;

  // ---- inputs: x secret, ALICE's share a random, BOB's share x - a (same PRNG both sides) ----
  std::mt19937_64 gen(seed);
  vector<uint64_t> xs(N), sh(N), y(N);
  for (int i = 0; i < N; i++) {
    uint64_t x = gen();
    if (approx) {  // |x| < 2^(l-4): the magnitude regime the reduced-ring comparison assumes
      int64_t v = (int64_t)(x % (1ULL << (l - 3))) - (int64_t)(1ULL << (l - 4));
      x = (uint64_t)v;
    }
    x &= mask;
    uint64_t a = gen() & mask;
    xs[i] = x;
    sh[i] = (party == sci::ALICE) ? a : ((x - a) & mask);
  }

  for (int rep = 0; rep < reps; rep++) {
    uint8_t z = 0;  // barrier
    if (party == sci::ALICE) { io->send_data(&z, 1); io->flush(); io->recv_data(&z, 1); }
    else { io->recv_data(&z, 1); io->send_data(&z, 1); io->flush(); }
    uint64_t c0 = io->counter, r0 = io->num_rounds;
    auto t0 = clk::now();
    relu->relu(y.data(), sh.data(), N, nullptr, false, /*do_trunc*/ false, approx);
    io->flush();
    double relu_ms = ms_since(t0);
    uint64_t bytes = io->counter - c0, rounds = io->num_rounds - r0;

    // ---- verification and exchange of figures (untimed) ----
    uint64_t other[3] = {0, 0, 0}, mine[3] = {bytes, rounds, setup_bytes};
    bool ok = true;
    uint64_t nerr = 0, nclose = 0;
    if (party == sci::ALICE) {
      io->send_data(mine, sizeof(mine));
      io->send_data(y.data(), (size_t)N * 8);
      io->flush();
      io->recv_data(other, sizeof(other));
      uint8_t o; io->recv_data(&o, 1); ok = o;
    } else {
      io->recv_data(other, sizeof(other));
      vector<uint64_t> ya(N);
      io->recv_data(ya.data(), (size_t)N * 8);
      int64_t half = 1LL << (l - 1);
      for (int i = 0; i < N; i++) {
        int64_t X = (int64_t)(xs[i] & mask); if (X >= half) X -= 2 * half;
        int64_t Y = (int64_t)((ya[i] + y[i]) & mask); if (Y >= half) Y -= 2 * half;
        int64_t E = X > 0 ? X : 0;
        if (Y == E) continue;
        if (approx && (X < (1LL << kScale)) && (X > -(1LL << kScale)) && (Y == 0 || Y == X)) { nclose++; continue; }
        if (nerr < 5) fprintf(stderr, "mismatch i=%d x=%lld got=%lld\n", i, (long long)X, (long long)Y);
        nerr++;
      }
      ok = nerr == 0;
      io->send_data(mine, sizeof(mine));
      uint8_t o = ok; io->send_data(&o, 1); io->flush();
    }
    uint64_t ba = party == sci::ALICE ? bytes : other[0], bb = party == sci::ALICE ? other[0] : bytes;
    uint64_t sa = party == sci::ALICE ? setup_bytes : other[2], sb = party == sci::ALICE ? other[2] : setup_bytes;
    if (party == sci::BOB) {
      printf("RESULT impl=cheetah op=relu mode=%s N=%d l=%d k=%d rep=%d relu_ms=%.1f "
             "bytes_alice=%llu bytes_bob=%llu bytes_total=%llu rounds_bob=%llu "
             "setup_ms=%.1f otpack_ms=%.1f setup_bytes_alice=%llu setup_bytes_bob=%llu setup_rounds_bob=%llu "
             "connect_ms=%.1f main_to_end_ms=%.1f verified=%s errors=%llu near_zero_tolerated=%llu\n",
             mode.c_str(), N, l, kScale, rep, relu_ms, (unsigned long long)ba, (unsigned long long)bb,
             (unsigned long long)(ba + bb), (unsigned long long)rounds, setup_ms, otpack_ms,
             (unsigned long long)sa, (unsigned long long)sb, (unsigned long long)setup_rounds,
             std::chrono::duration<double, std::milli>(t_conn - t_main).count(), ms_since(t_main),
             ok ? "yes" : (approx ? "approx" : "NO"), (unsigned long long)nerr, (unsigned long long)nclose);
      fflush(stdout);
    }
    if (!ok && !approx) return 1;
  }
  if (keep) { delete relu; delete otpack; }
  // By default the OTPack is not deleted: Ferret's destructor writes its leftover pre-OT data to
  // ./data/pre_ot_data_reg_* (and aborts if ./data does not exist). Without that file, every run
  // does the full Ferret setup from base OTs.
  return 0;
}
