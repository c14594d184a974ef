package daotel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// SetupOptions adjusts Setup. The zero value is what the CLI uses.
type SetupOptions struct {
	// ServiceName is service.name when OTEL_SERVICE_NAME does not set one;
	// empty means "deepagents".
	ServiceName string
	// Console is where the "console" exporter writes; nil means stderr.
	Console io.Writer
	// Getenv reads the environment; nil means os.Getenv (tests replace it).
	Getenv func(string) string
}

// Tracing is a configured tracer provider (and meter provider) and what
// shuts them down.
type Tracing struct {
	// Provider makes the spans; pass it as Config.TracerProvider. It is a
	// provider without exporters when only metrics were asked for.
	Provider *sdktrace.TracerProvider
	// Exporters names the trace exporters in use, e.g. ["otlp"].
	Exporters []string
	// Meters records the GenAI metrics, nil when no metrics exporter was
	// asked for; pass it as Config.MeterProvider when it is not nil (a nil
	// *MeterProvider in the interface field would be used, and fail).
	Meters *sdkmetric.MeterProvider
}

// Shutdown flushes the spans and metrics still buffered and stops the
// exporters, giving up when ctx ends. It is safe on a nil Tracing.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	if t.Provider != nil {
		errs = append(errs, t.Provider.Shutdown(ctx))
	}
	if t.Meters != nil {
		errs = append(errs, t.Meters.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// Setup builds a tracer provider from the standard OpenTelemetry
// environment variables, or returns nil when tracing is not asked for:
//
//   - OTEL_SDK_DISABLED=true turns tracing off.
//   - OTEL_TRACES_EXPORTER lists exporters: "otlp", "console" (spans as JSON
//     lines on Console) or "none". When it is unset, OTLP is used only if
//     OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
//     set, so that a plain run never tries to reach a collector nobody
//     started.
//   - OTEL_METRICS_EXPORTER is "otlp" or "none" for the GenAI metrics, with
//     the same default (OTLP when OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_METRICS_ENDPOINT is set); the interval comes from
//     OTEL_METRIC_EXPORT_INTERVAL.
//   - OTEL_EXPORTER_OTLP_(TRACES_|METRICS_)PROTOCOL must be "http/protobuf" (the
//     default); the gRPC and JSON protocols are not built in.
//   - The OTLP exporter reads its endpoint, headers, timeout, compression
//     and certificates from the OTEL_EXPORTER_OTLP_* variables itself; the
//     SDK reads OTEL_TRACES_SAMPLER(_ARG) and OTEL_BSP_*; the resource takes
//     OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
//
// Servers call it once at start and Shutdown at exit (deepagents serve does).
func Setup(ctx context.Context, opts SetupOptions) (*Tracing, error) {
	env := opts.Getenv
	if env == nil {
		env = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(env("OTEL_SDK_DISABLED")), "true") {
		return nil, nil
	}
	names, err := exporterNames(env, "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
	if err != nil {
		return nil, err
	}
	metricNames, err := exporterNames(env, "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
	if err != nil {
		return nil, err
	}
	if len(names) == 0 && len(metricNames) == 0 {
		return nil, nil
	}
	var tpOpts []sdktrace.TracerProviderOption
	var used []string
	for _, name := range names {
		switch name {
		case "otlp":
			if err := checkProtocol(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); err != nil {
				return nil, err
			}
			exp, err := otlptracehttp.New(ctx)
			if err != nil {
				return nil, fmt.Errorf("the OTLP trace exporter: %w", err)
			}
			tpOpts = append(tpOpts, sdktrace.WithBatcher(exp))
		case "console":
			w := opts.Console
			if w == nil {
				w = os.Stderr
			}
			exp, err := stdouttrace.New(stdouttrace.WithWriter(w))
			if err != nil {
				return nil, fmt.Errorf("the console trace exporter: %w", err)
			}
			tpOpts = append(tpOpts, sdktrace.WithSyncer(exp))
		default:
			return nil, fmt.Errorf("OTEL_TRACES_EXPORTER names %q, which deepagents does not have: use otlp, console or none", name)
		}
		used = append(used, name)
	}
	service := opts.ServiceName
	if service == "" {
		service = "deepagents"
	}
	// The environment's resource comes last so OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES win over the default name.
	res, err := resource.Merge(
		resource.NewSchemaless(semconv.ServiceName(service)),
		envResource(env),
	)
	if err != nil {
		return nil, fmt.Errorf("the trace resource: %w", err)
	}
	tpOpts = append(tpOpts, sdktrace.WithResource(res))
	t := &Tracing{Exporters: used}
	for _, name := range metricNames {
		if name != "otlp" {
			return nil, fmt.Errorf("OTEL_METRICS_EXPORTER names %q, which deepagents does not have: use otlp or none", name)
		}
		if err := checkProtocol(env, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"); err != nil {
			return nil, err
		}
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("the OTLP metric exporter: %w", err)
		}
		t.Meters = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
	}
	t.Provider = sdktrace.NewTracerProvider(tpOpts...)
	return t, nil
}

// exporterNames reads the exporter list in the variable key; when it is
// unset, OTLP is chosen if one of the endpoint variables is set. See Setup.
func exporterNames(env func(string) string, key string, endpoints ...string) ([]string, error) {
	raw := strings.TrimSpace(env(key))
	if raw == "" {
		if firstSet(env, endpoints...) != "" {
			return []string{"otlp"}, nil
		}
		return nil, nil
	}
	var names []string
	for _, n := range strings.Split(raw, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		switch n {
		case "":
			continue
		case "none":
			if strings.Contains(raw, ",") {
				return nil, fmt.Errorf(`%s: "none" cannot be combined with other exporters`, key)
			}
			return nil, nil
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names, nil
}

// checkProtocol refuses an OTLP protocol other than http/protobuf, the one
// the exporters speak, read from the signal's variable or the general one.
func checkProtocol(env func(string) string, signalKey string) error {
	proto := firstSet(env, signalKey, "OTEL_EXPORTER_OTLP_PROTOCOL")
	if proto != "" && proto != "http/protobuf" {
		return fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q is not supported: deepagents exports OTLP over HTTP with protobuf only (set it to http/protobuf)", proto)
	}
	return nil
}

func firstSet(env func(string) string, keys ...string) string {
	for _, k := range keys {
		if v := strings.TrimSpace(env(k)); v != "" {
			return v
		}
	}
	return ""
}

// envResource is the resource of OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES ("key=value,key=value", values percent-encoded);
// entries that do not parse are skipped.
func envResource(env func(string) string) *resource.Resource {
	var kv []attribute.KeyValue
	for _, pair := range strings.Split(env("OTEL_RESOURCE_ATTRIBUTES"), ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			continue
		}
		kv = append(kv, attribute.String(k, unescape(strings.TrimSpace(v))))
	}
	if s := strings.TrimSpace(env("OTEL_SERVICE_NAME")); s != "" {
		kv = append(kv, semconv.ServiceName(s))
	}
	return resource.NewSchemaless(kv...)
}

// unescape decodes the percent-encoding of a resource attribute value; a
// value that is not valid percent-encoding is kept as written.
func unescape(v string) string {
	if !strings.Contains(v, "%") {
		return v
	}
	u, err := url.PathUnescape(v)
	if err != nil || !utf8.ValidString(u) {
		return v
	}
	return u
}
