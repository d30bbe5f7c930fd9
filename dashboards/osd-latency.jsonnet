// OSD latency by stage, for a cluster and its hosts: where op time goes, per-stage p50/p99,
// heatmaps, slow ops by stage, the slowest OSDs per stage.
local g = import 'lib/panels.libsonnet';
local sel = g.sel('instance=~"$instance", fsid=~"$fsid", ceph_daemon=~"$ceph_daemon"');
// Ceph's own exporter names each OSD's host (ceph_osd_metadata); without it, the OSD alone.
local withHostname(expr) =
  '(' + expr + ' * on (ceph_daemon) group_left (hostname) max by (ceph_daemon, hostname) (ceph_osd_metadata{cluster=~"$cluster"})) or ' + expr;
// Fleet scale (docs/fleet.md): with every OSD selected ($ceph_daemon is `.*`), the stage
// quantiles read the per-host quantile rules instead of every OSD's buckets (4-26 s at 100
// nodes of 24 OSDs), and show the highest host's (one host selected: that host's). Each is
// `raw or rule`, and the variable empties one side in the index, before any sample is read:
// `ceph_daemon_all!~"$ceph_daemon"` (a label no series has, so "" is tested) drops every raw
// series when the value is `.*`, and the rule's series, which have no ceph_daemon, match
// `ceph_daemon=~"$ceph_daemon"` only then. (The rule side has no `le`: g.native leaves it as
// it is.)
local rawOnly = sel + ', ceph_daemon_all!~"$ceph_daemon"';
// `raw or rule`: RAW over each OSD's series, RULE over the per-host rule's, each given its side's
// selector.
local rawOrRule(raw, rule) = raw(rawOnly) + ' or ' + rule(sel);
local quantileOr(q, metric, rule, by, extra) =
  rawOrRule(function(s) 'histogram_quantile(' + q + ', sum by (' + by + ', le) (rate(' + metric + '_bucket{' + s + extra + '}[$__rate_interval])))',
            function(s) 'max by (' + by + ') (' + rule + '{' + s + extra + '})');
local stageQuantile(q, rule, op) =
  quantileOr(q, 'cephscope_osd_op_stage_seconds', rule, 'stage', ', op="' + op + '"');
// A stage's mean per op: over every host, the summed time over the summed ops of the
// per-host rules (exact over any set of hosts).
local stageMean(op) =
  local extra = ', op="' + op + '"';
  local rule(s, kind) = 'sum by (stage) (cephscope:host_osd_op_stage_seconds_' + kind + ':rate5m{' + s + extra + '})';
  rawOrRule(function(s) g.mean('cephscope_osd_op_stage_seconds', s + extra, 'stage'),
            function(s) rule(s, 'sum') + ' / ' + rule(s, 'count'));
// The heatmaps: every OSD's buckets, or with every OSD selected the per-host sums of the
// classic buckets (rule). Where only native histograms are stored, the sum over every OSD is
// cheap enough (docs/fleet.md): that side keeps the whole selection.
local opHeatmap(title, description, op) =
  local extra = ', op="' + op + '"';
  g.heatmap(title, description,
            rawOrRule(function(s) 'sum by (le) (rate(cephscope_osd_op_seconds_bucket{' + s + extra + '}[$__rate_interval]))',
                      function(s) 'sum by (le) (cephscope:host_osd_op_seconds_bucket:rate5m{' + s + extra + '})'),
            exemplar=true,
            native='sum (rate(cephscope_osd_op_seconds{' + sel + extra + '}[$__rate_interval]))');

// The slowest OSDs per write stage: with every host and OSD selected, from the fleet's five
// per stage (cephscope:osd_op_stage_seconds:top5_p99_5m, per cluster, job and fsid); else
// from the selected OSDs' quantiles. `instance_all` and `ceph_daemon_all` are labels no
// series has, so each side is emptied in the index as for rawOnly above.
local slowestOsds =
  local perOsd(extra) = 'cephscope:osd_op_stage_seconds:p99_5m{' + sel + ', op="write", ' + extra + '}';
  'topk by (stage) (5, max by (ceph_daemon, fsid, stage) ('
  + perOsd('ceph_daemon_all!~"$ceph_daemon"') + ' or ' + perOsd('instance_all!~"$instance"')
  + ' or cephscope:osd_op_stage_seconds:top5_p99_5m{' + g.sel('fsid=~"$fsid"')
  + ', op="write", ceph_daemon_all=~"$ceph_daemon", instance_all=~"$instance"}))';

g.dashboard(
  'cephscope-osd-latency',
  'cephscope / OSD latency by stage',
  'Where the time of client ops goes inside the OSDs, stage by stage (cephscope eBPF histograms).',
  [g.template.datasource, g.template.cluster, g.template.job, g.template.instance, g.template.fsid,
   g.template.ceph_daemon(multi=true)],
  [g.row('Where op time goes', 0)]
  + g.layout([
    g.timeseries('Write time by stage (mean per op)',
                 'Mean time a client write spends in each stage on its primary OSD; the stages add up to the whole op.',
                 [g.target(stageMean('write'), '{{stage}}')], stack=true),
    g.timeseries('Read time by stage (mean per op)',
                 'Mean time a client read spends in each stage on its primary OSD.',
                 [g.target(stageMean('read'), '{{stage}}')], stack=true),
  ], y=1)
  + [g.row('Stage quantiles', 9)]
  + g.layout([
    g.timeseries('Write p99 by stage', '99th percentile of each write stage, from the histograms (not an average of averages); with every OSD selected, the highest of the hosts\' (recording rule cephscope:host_osd_op_stage_seconds:p99_5m).',
                 [g.target(stageQuantile('0.99', 'cephscope:host_osd_op_stage_seconds:p99_5m', 'write'), '{{stage}}', exemplar=true)]),
    g.timeseries('Write p50 by stage', 'Median of each write stage; with every OSD selected, the highest of the hosts\' (recording rule cephscope:host_osd_op_stage_seconds:p50_5m).',
                 [g.target(stageQuantile('0.5', 'cephscope:host_osd_op_stage_seconds:p50_5m', 'write'), '{{stage}}')]),
    g.timeseries('Read p99 by stage', '99th percentile of each read stage; with every OSD selected, the highest of the hosts\'.',
                 [g.target(stageQuantile('0.99', 'cephscope:host_osd_op_stage_seconds:p99_5m', 'read'), '{{stage}}', exemplar=true)]),
    g.timeseries('Replica sub-op p99 by stage', '99th percentile of each stage of replicated writes on the replicas; with every OSD selected, the highest of the hosts\' (recording rule cephscope:host_osd_subop_stage_seconds:p99_5m).',
                 [g.target(quantileOr('0.99', 'cephscope_osd_subop_stage_seconds', 'cephscope:host_osd_subop_stage_seconds:p99_5m', 'stage', ''), '{{stage}}', exemplar=true)]),
  ], y=10)
  + [g.row('Heatmaps', 26)]
  + g.layout([
    opHeatmap('Client write latency', 'Whole client writes on their primary: received to reply (Ceph\'s op_w_latency); with every OSD selected, from the per-host sums of the buckets (recording rule cephscope:host_osd_op_seconds_bucket:rate5m).', 'write'),
    opHeatmap('Client read latency', 'Whole client reads on their primary (Ceph\'s op_r_latency); with every OSD selected, from the per-host sums.', 'read'),
  ], y=27)
  + [g.row('Slow ops and slowest OSDs', 35)]
  + g.layout([
    g.timeseries('Slow ops by stage', 'Ops over the daemon\'s slow-op threshold, counted under their longest stage.',
                 [g.target(rawOrRule(function(s) 'sum by (op, stage) (rate(cephscope_osd_slow_ops_total{' + s + '}[$__rate_interval]))',
                                      function(s) 'sum by (op, stage) (cephscope:host_osd_slow_ops:rate5m{' + s + '})'), '{{op}} {{stage}}')],
                 unit='ops'),
    // These three read recording rules (docs/fleet.md): over the raw histograms of 100 nodes
    // of 24 OSDs they took 9-109 s.
    g.table('Slowest OSDs per stage (write p99)', 'The five OSDs with the highest p99 of each write stage over the last 5 minutes (recording rules cephscope:osd_op_stage_seconds:p99_5m, and :top5_p99_5m with every OSD selected), with their host where Ceph\'s exporter is scraped.',
            withHostname(slowestOsds)),
    g.timeseries('Whole write p99 per OSD', '99th percentile of client writes per primary OSD over 5 minutes (recording rule cephscope:osd_op_seconds:p99_5m).',
                 [g.target('max by (ceph_daemon, fsid) (cephscope:osd_op_seconds:p99_5m{' + sel + ', op="write"})', '{{ceph_daemon}}')]),
    g.timeseries('Write p99 per host', '99th percentile of client writes per cephscope instance (host), all its OSDs, over 5 minutes (recording rule cephscope:host_osd_op_seconds:p99_5m).',
                 [g.target('max by (instance) (cephscope:host_osd_op_seconds:p99_5m{' + g.sel('instance=~"$instance", fsid=~"$fsid"') + ', op="write"})', '{{instance}}')]),
  ], y=36)
)
