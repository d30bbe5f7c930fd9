// Clients: librados/librbd processes as cephscope sees them (the rados collector), and how much
// of their wait is spent outside the OSDs.
local g = import 'lib/panels.libsonnet';
local sel = g.sel();

g.dashboard(
  'cephscope-clients',
  'cephscope / clients',
  'Ceph clients on the hosts cephscope runs on.',
  [g.template.datasource, g.template.cluster, g.template.job],
  g.layout([
    g.table('Client processes', 'librados clients cephscope tracks, by process name, with their container.',
            'count by (instance, process, target_container) (cephscope_target_info{' + sel + ', kind="librados-client"})'),
    g.timeseries('Client op latency p99', 'Client-observed latency (first send to finish) per process, pool and op.',
                 [g.target('histogram_quantile(0.99, sum by (process, pool, op, le) (rate(cephscope_client_op_seconds_bucket{' + sel + '}[$__rate_interval])))', '{{process}} pool {{pool}} {{op}}')]),
    g.timeseries('Client ops per second', 'Ops finished per second by librados clients, per process, pool and op.',
                 [g.target('sum by (process, pool, op) (rate(cephscope_client_op_seconds_count{' + sel + '}[$__rate_interval])) or sum by (process, pool, op) (histogram_count(rate(cephscope_client_op_seconds{' + sel + '}[$__rate_interval])))', '{{process}} pool {{pool}} {{op}}')], unit='ops'),
    g.timeseries('Client wait outside the OSDs', 'Mean client-observed latency minus the primary OSDs\' mean for the same kind of op: network, messengers and client library (docs/collectors/rados.md).',
                 [g.target('cephscope:client_minus_osd_seconds:mean5m{cluster=~"$cluster"}', 'pool {{pool}} {{op}}')]),
  ], y=0)
)
