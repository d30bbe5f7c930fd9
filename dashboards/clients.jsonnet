// Clients: librados/librbd processes and kernel clients as cephscope sees them. Client
// latency panels fill once the client collector serves them (the test lists them as pending).
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
    g.timeseries('Client op latency p99 (pending: client collector)', 'Client-observed latency per process, pool and op.',
                 [g.target('histogram_quantile(0.99, sum by (process, pool, op, le) (rate(cephscope_client_op_seconds_bucket{' + sel + '}[$__rate_interval])))', '{{process}} {{pool}} {{op}}')]),
  ], y=0)
)
