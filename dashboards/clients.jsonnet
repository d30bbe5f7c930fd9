// Clients: librados/librbd processes as cephscope sees them (the rados collector), how much of
// their wait is spent outside the OSDs, and the kernel's own Ceph client (the kclient
// collector): krbd devices, CephFS data (OSD requests) and CephFS metadata (MDS requests).
local g = import 'lib/panels.libsonnet';
local sel = g.sel();
local rate(metric, selector) = 'rate(' + metric + '{' + selector + '}[$__rate_interval])';

// The kernel client's OSD requests: an rbd device's data requests carry `device`; a CephFS
// mount's are those of a client with a mount (cephscope_kclient_cephfs_mount_info), whatever
// the request, so krbd's header requests stay out of them.
local osdReq = 'cephscope_kclient_osd_request_seconds';
local krbd = sel + ', device!=""';
local cephfs = sel + ', device=""';
local mounted = ' and on (instance, job, client) cephscope_kclient_cephfs_mount_info{' + sel + '}';
// The rate of metric M over selector S (and JOIN), summed by BY; its p99; requests per second.
local kc(by, m, s, join) = 'sum by (' + by + ') (' + rate(m, s) + join + ')';
local p99(by, m, s, join) = 'histogram_quantile(0.99, ' + kc(by + ', le', m + '_bucket', s, join) + ')';
local perSecond(by, m, s, join) =
  kc(by, m + '_count', s, join) + ' or sum by (' + by + ') (histogram_count(' + rate(m, s) + join + '))';
local mdsReq = 'cephscope_kclient_mds_request_seconds';

g.dashboard(
  'cephscope-clients',
  'cephscope / clients',
  'Ceph clients on the hosts cephscope runs on: librados processes and the kernel client (krbd, CephFS).',
  [g.template.datasource, g.template.cluster, g.template.job],
  g.layout([
    g.table('Client processes', 'librados clients cephscope tracks, by process name, with their container.',
            'count by (instance, process, target_container) (cephscope_target_info{' + sel + ', kind="librados-client"})'),
    g.timeseries('Client op latency p99', 'Client-observed latency (first send to finish) per process, pool and op.',
                 [g.target('histogram_quantile(0.99, sum by (process, pool, op, le) (rate(cephscope_client_op_seconds_bucket{' + sel + '}[$__rate_interval])))', '{{process}} pool {{pool}} {{op}}', exemplar=true)]),
    g.timeseries('Client ops per second', 'Ops finished per second by librados clients, per process, pool and op.',
                 [g.target('sum by (process, pool, op) (rate(cephscope_client_op_seconds_count{' + sel + '}[$__rate_interval])) or sum by (process, pool, op) (histogram_count(rate(cephscope_client_op_seconds{' + sel + '}[$__rate_interval])))', '{{process}} pool {{pool}} {{op}}')], unit='ops'),
    g.timeseries('Client wait outside the OSDs', 'Mean client-observed latency minus the primary OSDs\' mean for the same kind of op: network, messengers and client library (docs/collectors/rados.md).',
                 [g.target('cephscope:client_minus_osd_seconds:mean5m{cluster=~"$cluster"}', 'pool {{pool}} {{op}}')]),
  ], y=0)
  + [g.row('Kernel client: krbd devices (OSD requests)', 16)]
  + g.layout([
    g.heatmap('krbd request latency', 'OSD requests of the kernel\'s rbd devices, submitted to completed (libceph), all devices and ops.',
              kc('le', osdReq + '_bucket', krbd, '')),
    g.timeseries('krbd request p99', '99th percentile of each rbd device\'s OSD requests, per op.',
                 [g.target(p99('instance, device, op', osdReq, krbd, ''), '{{instance}} {{device}} {{op}}')]),
    g.timeseries('krbd requests per second', 'OSD requests completed per second per rbd device and op.',
                 [g.target(perSecond('instance, device, op', osdReq, krbd, ''), '{{instance}} {{device}} {{op}}')], unit='ops'),
    g.timeseries('krbd bytes', 'Bytes read and written per second per rbd device: the extents of the requests that succeeded.',
                 [g.target(kc('instance, device, op', 'cephscope_kclient_osd_request_bytes_total', krbd, ''), '{{instance}} {{device}} {{op}}')], unit='Bps'),
    g.timeseries('krbd request errors', 'OSD requests of rbd devices that ended with an error, per second, by class (not_found on reads of never-written blocks is krbd\'s normal way to read zeros).',
                 [g.target(kc('instance, device, op, class', 'cephscope_kclient_osd_request_errors_total', krbd, ''), '{{instance}} {{device}} {{op}} {{class}}')], unit='ops'),
  ], y=17, width=8)
  + [g.row('Kernel client: CephFS data (OSD requests)', 33)]
  + g.layout([
    g.heatmap('CephFS data request latency', 'OSD requests of the kernel clients that have a CephFS mount (file data), submitted to completed.',
              kc('le', osdReq + '_bucket', cephfs, mounted)),
    g.timeseries('CephFS data request p99', '99th percentile of the CephFS OSD requests per client (client.<id>, one per mounted file system) and op.',
                 [g.target(p99('instance, client, op', osdReq, cephfs, mounted), '{{instance}} {{client}} {{op}}')]),
    g.timeseries('CephFS data bytes', 'File data read and written per second per client: the extents of the OSD requests that succeeded.',
                 [g.target(kc('instance, client, op', 'cephscope_kclient_osd_request_bytes_total', cephfs, mounted), '{{instance}} {{client}} {{op}}')], unit='Bps'),
    g.timeseries('CephFS data request errors', 'CephFS OSD requests that ended with an error, per second, by client, op and class (not_found: a read of a hole).',
                 [g.target(kc('instance, client, op, class', 'cephscope_kclient_osd_request_errors_total', cephfs, mounted), '{{instance}} {{client}} {{op}} {{class}}')], unit='ops'),
  ], y=34)
  + [g.row('Kernel client: CephFS metadata (MDS requests)', 50)]
  + g.layout([
    g.heatmap('MDS request latency', 'CephFS MDS requests of the kernel clients, submitted to released (after the MDS\'s safe reply), all ops.',
              kc('le', mdsReq + '_bucket', sel, '')),
    g.timeseries('MDS request p99', '99th percentile of the MDS requests per op (create, lookup, getattr, setattr, ...).',
                 [g.target(p99('instance, op', mdsReq, sel, ''), '{{instance}} {{op}}')]),
    g.timeseries('MDS requests per second', 'MDS requests completed per second per op.',
                 [g.target(perSecond('instance, op', mdsReq, sel, ''), '{{instance}} {{op}}')], unit='ops'),
    g.timeseries('MDS request errors', 'MDS requests that ended aborted or timed out, per second and op (an error the MDS answered, such as ENOTEMPTY, is not counted).',
                 [g.target(kc('instance, op', 'cephscope_kclient_mds_request_errors_total', sel, ''), '{{instance}} {{op}}')], unit='ops'),
  ], y=51)
)
