package serve

// Observability: Prometheus metrics of a Server and the /healthz and /readyz probes.

import (
	"errors"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are a Server's Prometheus metrics, on a registry of their own (with the Go runtime's
// and the process's default collectors). Set Server.Metrics to record them; serve them with
// Handler.
type Metrics struct {
	Registry *prometheus.Registry

	started, finished prometheus.Counter
	failed            *prometheus.CounterVec // by reason
	refused           *prometheus.CounterVec // before a session, by reason
	running, queued   prometheus.Gauge
	duration, setup   prometheus.Histogram
	bytes             *prometheus.HistogramVec // by direction
	layer             *prometheus.HistogramVec // by op
}

// NewMetrics makes the metrics and registers them.
func NewMetrics() *Metrics {
	const ns = "scirun"
	m := &Metrics{Registry: prometheus.NewRegistry()}
	m.started = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "sessions_started_total",
		Help: "Sessions started (a client past the handshake's admission: slot taken)."})
	m.finished = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "sessions_finished_total",
		Help: "Sessions that ran to the client's acknowledgement."})
	m.failed = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "sessions_failed_total",
		Help: "Sessions that failed, by reason."}, []string{"reason"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "clients_refused_total",
		Help: "Clients refused or dropped before a session, by reason."}, []string{"reason"})
	m.running = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "sessions_running",
		Help: "Sessions running now."})
	m.queued = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "sessions_queued",
		Help: "Clients waiting for a session slot (the queue's length)."})
	m.duration = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "session_duration_seconds",
		Help: "Wall-clock time of a session at the server, handshake to acknowledgement.", Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)})
	m.setup = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "session_setup_duration_seconds",
		Help: "Backend set-up time of a session (base OTs, silent-OT bootstrap, HE keys).", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)})
	m.bytes = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "session_bytes",
		Help: "Bytes of a session at the server, by direction (sent, received).", Buckets: prometheus.ExponentialBuckets(1<<16, 4, 12)}, []string{"direction"})
	m.layer = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "layer_duration_seconds",
		Help: "Wall-clock time of one layer (instruction) of a session, by op.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"op"})
	m.Registry.MustRegister(m.started, m.finished, m.failed, m.refused, m.running, m.queued, m.duration, m.setup, m.bytes, m.layer,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves /metrics, /healthz (200 while the process runs) and /readyz (200 while ready
// reports true, i.e. the server accepts sessions; 503 while it drains).
func (m *Metrics) Handler(ready func() bool) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready != nil && !ready() {
			http.Error(w, "draining: not accepting sessions", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	return mux
}

// The recording methods accept a nil *Metrics (no metrics).

func (m *Metrics) sessionStarted() {
	if m != nil {
		m.started.Inc()
		m.running.Inc()
	}
}

func (m *Metrics) sessionEnded(r *Report, err error) {
	if m == nil {
		return
	}
	m.running.Dec()
	if err != nil {
		m.failed.WithLabelValues(failureReason(err)).Inc()
	} else {
		m.finished.Inc()
	}
	if r == nil {
		return
	}
	m.duration.Observe(r.TotalMS / 1e3)
	if r.SetupMS > 0 {
		m.setup.Observe(r.SetupMS / 1e3)
	}
	m.bytes.WithLabelValues("sent").Observe(float64(r.Total.BytesSent))
	m.bytes.WithLabelValues("received").Observe(float64(r.Total.BytesRecv))
	for _, l := range r.Layers {
		m.layer.WithLabelValues(l.Op).Observe(l.MS / 1e3)
	}
}

func (m *Metrics) clientRefused(reason string) {
	if m != nil {
		m.refused.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) queue(delta float64) {
	if m != nil {
		m.queued.Add(delta)
	}
}

// failureReason classifies a session's error into a few label values.
func failureReason(err error) string {
	var he *HandshakeError
	msg := err.Error()
	switch {
	case errors.Is(err, ErrShutdown):
		return "shutdown"
	case errors.Is(err, ErrSessionTimeout):
		return "session_timeout"
	case errors.As(err, &he):
		return "handshake"
	case strings.Contains(msg, "ended the session"):
		return "peer_aborted"
	case strings.Contains(msg, "disconnected"):
		return "peer_disconnected"
	case strings.Contains(msg, "stalled"):
		return "peer_stalled"
	case strings.Contains(msg, "context canceled"):
		return "cancelled"
	case strings.Contains(msg, "set-up"):
		return "setup"
	}
	return "other"
}
