// The fleet: every host's OSDs at once, from the recording rules of the cephscope-fleet group
// (and the per-OSD quantiles of cephscope-osd-latency) only, never from the raw histograms:
// at 100 nodes of 24 OSDs those are over a million series, and a panel over them takes tens
// of seconds (docs/fleet.md). A federating Prometheus that keeps only cephscope:* serves it.
// The rules are quantiles per host, device class and pool (floats, which every Prometheus
// records, classic or native): a panel over several hosts shows the highest of theirs.
// For one host or one OSD, the OSD latency and OSD detail dashboards read the raw series.
local g = import 'lib/panels.libsonnet';
local sel = 'cluster=~"$cluster", job=~"$job", fsid=~"$fsid"';
local rule(name, extra='') = name + '{' + sel + (if extra == '' then '' else ', ' + extra) + '}';
// The highest of the rule's quantiles per BY (its series are per host, class or pool).
local highest(name, by, extra='') = 'max by (' + by + ') (' + rule(name, extra) + ')';
local variable(name, label, expr) = g.template.query(name, label, expr, multi=true, includeAll=true);

g.dashboard(
  'cephscope-fleet',
  'cephscope / fleet',
  'Every host and OSD at once, from recording rules (per host, device class and pool).',
  [g.template.datasource, g.template.cluster,
   variable('job', 'Job', 'label_values(cephscope:host_osd_op_seconds:p99_5m{cluster=~"$cluster"}, job)'),
   variable('fsid', 'Ceph cluster (fsid)', 'label_values(cephscope:host_osd_op_seconds:p99_5m{cluster=~"$cluster", job=~"$job"}, fsid)')],
  [g.row('Stage quantiles, the highest host per stage (cephscope:host_osd_*stage_seconds:p99_5m, :p50_5m)', 0)]
  + g.layout([
    g.timeseries('Write p99 by stage', '99th percentile of each write stage over each host\'s OSDs, the highest host of the selected clusters.',
                 [g.target(highest('cephscope:host_osd_op_stage_seconds:p99_5m', 'stage', 'op="write"'), '{{stage}}')]),
    g.timeseries('Write p50 by stage', 'Median of each write stage over each host\'s OSDs, the highest host.',
                 [g.target(highest('cephscope:host_osd_op_stage_seconds:p50_5m', 'stage', 'op="write"'), '{{stage}}')]),
    g.timeseries('Read p99 by stage', '99th percentile of each read stage over each host\'s OSDs, the highest host.',
                 [g.target(highest('cephscope:host_osd_op_stage_seconds:p99_5m', 'stage', 'op="read"'), '{{stage}}')]),
    g.timeseries('Replica sub-op p99 by stage', '99th percentile of each stage of replicated writes over each host\'s replicas, the highest host.',
                 [g.target(highest('cephscope:host_osd_subop_stage_seconds:p99_5m', 'stage'), '{{stage}}')]),
  ], y=1)
  + [g.row('Hosts, device classes, pools', 17)]
  + g.layout([
    g.timeseries('Write p99 per host', '99th percentile of client writes on each host\'s primary OSDs (cephscope:host_osd_op_seconds:p99_5m).',
                 [g.target(highest('cephscope:host_osd_op_seconds:p99_5m', 'instance', 'op="write"'), '{{instance}}')]),
    g.timeseries('Write p99 per device class', '99th percentile of client writes per OSD device class and cluster, from Ceph\'s ceph_osd_metadata (cephscope:device_class_osd_op_seconds:p99_5m); the highest cluster.',
                 [g.target('max by (device_class, op) (cephscope:device_class_osd_op_seconds:p99_5m{cluster=~"$cluster", fsid=~"$fsid"})', '{{device_class}} {{op}}')]),
    g.timeseries('Client op p99 per pool', 'Client-observed latency per pool and op, over every client host (cephscope:pool_client_op_seconds:p99_5m).',
                 [g.target('max by (pool, op) (cephscope:pool_client_op_seconds:p99_5m{cluster=~"$cluster"})', 'pool {{pool}} {{op}}')]),
    g.heatmap('Write p99 of the hosts', 'How many hosts had their client-write p99 in each latency band (cephscope:host_osd_op_seconds:p99_5m): one hot row is a healthy fleet, a trail above it the slow hosts.',
              rule('cephscope:host_osd_op_seconds:p99_5m', 'op="write"'))
    + { targets: [g.target(rule('cephscope:host_osd_op_seconds:p99_5m', 'op="write"'), '{{instance}}')],
        options+: { calculate: true,
                    calculation: { yBuckets: { mode: 'count', value: '16', scale: { type: 'log', log: 2 } } } } },
  ], y=18)
  + [g.row('Slow ops and slowest OSDs', 34)]
  + g.layout([
    g.timeseries('Slow ops per host and stage', 'Ops over the daemon\'s slow-op threshold per second, per host, op and longest stage (cephscope:host_osd_slow_ops:rate5m).',
                 [g.target('sum by (instance, op, stage) (' + rule('cephscope:host_osd_slow_ops:rate5m') + ')', '{{instance}} {{op}} {{stage}}')],
                 unit='ops'),
    g.table('Slowest OSDs per stage (write p99)', 'The five OSDs with the highest p99 of each write stage over the last 5 minutes (cephscope:osd_op_stage_seconds:top5_p99_5m: the five per cluster, job and fsid).',
            'topk by (stage) (5, max by (ceph_daemon, fsid, stage) (' + rule('cephscope:osd_op_stage_seconds:top5_p99_5m', 'op="write"') + '))'),
    g.timeseries('Write amplification per host', 'Device bytes written per byte asked to store, per host (cephscope:host_write_amplification:ratio5m).',
                 [g.target('cephscope:host_write_amplification:ratio5m{cluster=~"$cluster", job=~"$job"}', '{{instance}}')], unit='none'),
  ], y=35)
)
