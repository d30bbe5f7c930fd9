"""The two expositions cephscope serves, read and written by the fleet simulator: Prometheus'
text format (0.0.4) and its protobuf format (delimited io.prometheus.client.MetricFamily),
with native histograms built from the classic buckets exactly as the daemon builds them
(daemon/metrics/protobuf_exposition.cpp). Standard library only."""
import math
import re
import struct

PROTOBUF_TYPE = ("application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
                 "encoding=delimited")
TEXT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# MetricFamily: name 1, help 2, type 3, metric 4. Metric: label 1, gauge 2, counter 3,
# untyped 5, histogram 7. Histogram: sample_count 1, sample_sum 2, bucket 3, schema 5,
# zero_threshold 6, zero_count 7, positive_span 12, positive_delta 13.
COUNTER, GAUGE, SUMMARY, UNTYPED, HISTOGRAM = 0, 1, 2, 3, 4
KIND_FIELD = {GAUGE: 2, COUNTER: 3, UNTYPED: 5}
HIST_SLOTS, COARSE_BUCKETS = 25 + 1, 13 + 1  # bpf/histogram.h: 25 finite slots, +Inf
FIRST_SLOT_INDEX = -20  # slot 0 (le 1e-06) is native bucket -20 of schema 0


# ---------------------------------------------------------------- protobuf, reading

def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, i
        shift += 7


def fields(buf):
    """(number, wire type, value) of each field of one message: ints for varints, bytes for
    length-delimited fields, raw 8 bytes for fixed64."""
    i, n = 0, len(buf)
    while i < n:
        key, i = varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            ln, i = varint(buf, i)
            v, i = buf[i:i + ln], i + ln
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt}")
        yield num, wt, v


def read_families(data):
    """Delimited MetricFamily messages -> [(name, help, type, [(labels, value)])]: labels a
    tuple of (name, value) pairs; value a float (counter, gauge, untyped) or, for a histogram,
    (count, sum, [(upper_bound, cumulative_count)])."""
    out, i = [], 0
    while i < len(data):
        ln, i = varint(data, i)
        msg, i = data[i:i + ln], i + ln
        name = help_ = ""
        kind = UNTYPED
        metrics = []
        for num, _, v in fields(msg):
            if num == 1:
                name = v.decode()
            elif num == 2:
                help_ = v.decode()
            elif num == 3:
                kind = v
            elif num == 4:
                metrics.append(read_metric(v))
        out.append((name, help_, kind, metrics))
    return out


def read_metric(msg):
    labels, value = [], None
    for num, _, v in fields(msg):
        if num == 1:
            pair = dict((n, x.decode()) for n, _, x in fields(v))
            labels.append((pair.get(1, ""), pair.get(2, "")))
        elif num in (2, 3, 5):
            value = 0.0
            for n, _, x in fields(v):
                if n == 1:
                    value = struct.unpack("<d", x)[0]
        elif num == 7:
            count, total, buckets = 0, 0.0, []
            for n, _, x in fields(v):
                if n == 1:
                    count = x
                elif n == 2:
                    total = struct.unpack("<d", x)[0]
                elif n == 3:
                    b = {bn: bx for bn, _, bx in fields(x)}
                    buckets.append((struct.unpack("<d", b[2])[0], b.get(1, 0)))
            value = (count, total, buckets)
    return tuple(labels), value


# ---------------------------------------------------------------- protobuf, writing

def enc_varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag(v):
    return (v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1


def ld(num, payload):
    """A length-delimited field."""
    return enc_varint(num << 3 | 2) + enc_varint(len(payload)) + payload


def enc_double(num, x):
    return enc_varint(num << 3 | 1) + struct.pack("<d", x)


def enc_uint(num, v):
    return enc_varint(num << 3) + enc_varint(v)


def enc_labels(labels):
    return b"".join(ld(1, ld(1, n.encode()) + ld(2, v.encode())) for n, v in labels)


def enc_family_head(name, help_, kind):
    return ld(1, name.encode()) + ld(2, help_.encode()) + enc_uint(3, kind)


def enc_scalar(kind, x):
    return ld(KIND_FIELD[kind], enc_double(1, x))


def enc_histogram(count, total, bounds_enc, cums):
    """A histogram field of a Metric: classic buckets (BOUNDS_ENC: each bucket's prepared
    upper-bound field) and, with the kernel's slots or every other one, the native form."""
    h = [enc_uint(1, count), enc_double(2, total)]
    for be, c in zip(bounds_enc, cums):
        h.append(ld(3, enc_uint(1, c) + be))
    n = len(cums)
    if n in (HIST_SLOTS, COARSE_BUCKETS) and bounds_enc and bounds_enc[-1] == INF_BOUND:
        schema = 0 if n == HIST_SLOTS else -1
        counts, below = [], 0
        for c in cums:
            counts.append(c - below)
            below = c
        first, last = 0, n
        while first < n and counts[first] == 0:
            first += 1
        while last > first and counts[last - 1] == 0:
            last -= 1
        h.append(enc_varint(5 << 3) + enc_varint(zigzag(schema)))
        h.append(enc_double(6, 0.0))
        if first == last:
            h.append(ld(12, enc_varint(1 << 3) + enc_varint(0) + enc_uint(2, 0)))
        else:
            offset = first + FIRST_SLOT_INDEX if schema == 0 else FIRST_SLOT_INDEX // 2 + first
            h.append(ld(12, enc_varint(1 << 3) + enc_varint(zigzag(offset)) +
                        enc_uint(2, last - first)))
            prev, packed = 0, bytearray()
            for k in range(first, last):
                packed += enc_varint(zigzag(counts[k] - prev))
                prev = counts[k]
            h.append(ld(13, bytes(packed)))
    return ld(7, b"".join(h))


def bound_field(ub):
    return enc_double(2, ub)


INF_BOUND = bound_field(math.inf)


# ---------------------------------------------------------------- text, reading

LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(\s+\S+)?$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def read_text(data):
    """Text exposition -> (comment lines by family name, [(name, labels, value)])."""
    comments, samples = {}, []
    for line in data.decode().splitlines():
        if not line:
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3:
                comments.setdefault(parts[2], []).append(line)
            continue
        m = LINE.match(line)
        if not m:
            raise ValueError(f"unreadable line: {line!r}")
        labels = tuple(LABEL.findall(m.group(2) or ""))
        samples.append((m.group(1), labels, float(m.group(3))))
    return comments, samples


def text_labels(labels):
    if not labels:
        return ""
    return "{" + ",".join(f'{n}="{v}"' for n, v in labels) + "}"


def fmt_value(x):
    if x == math.inf:
        return "+Inf"
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(x)
