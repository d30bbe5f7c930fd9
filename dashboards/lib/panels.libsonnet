// A small stand-in for grafonnet: the few Grafana objects cephscope's dashboards use, with
// ceph-mixin's conventions (templates datasource, cluster, job, ceph_daemon; joins
// on(ceph_daemon); the $__rate_interval window).
{
  // Every series selector of the dashboards carries these matchers.
  sel(extra=''):: 'cluster=~"$cluster", job=~"$job"' + (if extra == '' then '' else ', ' + extra),

  datasource:: { type: 'prometheus', uid: '${datasource}' },

  template: {
    datasource: {
      name: 'datasource',
      label: 'Data source',
      type: 'datasource',
      query: 'prometheus',
      current: { text: 'default', value: 'default' },
      hide: 0,
      refresh: 1,
    },
    query(name, label, query, multi=false, includeAll=false, hide=0):: {
      name: name,
      label: label,
      type: 'query',
      datasource: $.datasource,
      query: { query: query, refId: name },
      definition: query,
      refresh: 2,
      multi: multi,
      includeAll: includeAll,
      allValue: if includeAll then '.*' else null,
      hide: hide,
      sort: 3,
      current: {},
      options: [],
    },
    // cluster is the operator's own label (Prometheus external_labels or relabelling); it is
    // hidden, like ceph-mixin's, and matches everything where it is not set.
    cluster: self.query('cluster', 'Cluster', 'label_values(cephscope_build_info, cluster)',
                        includeAll=true, hide=2),
    job: self.query('job', 'Job', 'label_values(cephscope_build_info{cluster=~"$cluster"}, job)',
                    multi=true, includeAll=true),
    // A host is a cephscope instance (one daemon per node).
    instance: self.query('instance', 'Host (cephscope instance)',
                         'label_values(cephscope_build_info{cluster=~"$cluster", job=~"$job"}, instance)',
                         multi=true, includeAll=true),
    // A host may run two clusters: their OSDs differ by fsid (docs/metrics.md). The OSDs come
    // from a gauge every OSD target has: a histogram's _count is not stored where Prometheus
    // keeps native histograms.
    fsid: self.query('fsid', 'Ceph cluster (fsid)',
                     'label_values(cephscope_osd_stage_available{cluster=~"$cluster", job=~"$job"}, fsid)',
                     multi=true, includeAll=true),
    ceph_daemon(multi=false):: self.query(
      'ceph_daemon', 'OSD',
      'label_values(cephscope_osd_stage_available{cluster=~"$cluster", job=~"$job", instance=~"$instance", fsid=~"$fsid"}, ceph_daemon)',
      multi=multi, includeAll=multi),
  },

  // The native form of a query over classic buckets: the histogram itself in place of its
  // _bucket series, summed without `le`. A Prometheus with native histograms on keeps only
  // that form (docs/metrics.md#native-histograms).
  native(expr):: std.strReplace(std.strReplace(std.strReplace(expr, '_bucket{', '{'),
                                               ', le)', ')'), 'sum by (le) ', 'sum '),

  // The mean of a histogram per `by`, from its classic _sum and _count, or from the native
  // form (histogram_sum, histogram_count) where only that is stored.
  mean(metric, selector, by)::
    local rate(s) = 'rate(' + metric + s + '{' + selector + '}[$__rate_interval])';
    'sum by (' + by + ') (' + rate('_sum') + ') / sum by (' + by + ') (' + rate('_count') + ')'
    + ' or sum by (' + by + ') (histogram_sum(' + rate('') + ')) / sum by (' + by
    + ') (histogram_count(' + rate('') + '))',

  // Queries over classic buckets work on either kind of Prometheus: `classic or native`
  // (one of the two is empty on any one server). EXEMPLAR: Grafana also asks for the
  // exemplars of the series the query reads (the slowest op of each series per scrape,
  // labelled trace_id: docs/dashboards.md#exemplars).
  // NATIVE, where given, is the native form itself (for a query whose native side differs
  // from its classic side by more than the histogram's name).
  target(expr, legend='', format='time_series', exemplar=false, native=null):: {
    expr: if native != null then expr + ' or ' + native
    else if std.length(std.findSubstr('_bucket{', expr)) > 0
    then expr + ' or ' + $.native(expr)
    else expr,
    legendFormat: legend,
    format: format,
    refId: 'A',
    datasource: $.datasource,
  } + (if exemplar then { exemplar: true } else {}),

  grid(x, y, w, h):: { x: x, y: y, w: w, h: h },

  row(title, y):: {
    type: 'row',
    title: title,
    collapsed: false,
    gridPos: $.grid(0, y, 24, 1),
    panels: [],
  },

  timeseries(title, description, targets, unit='s', stack=false, pos={}):: {
    type: 'timeseries',
    title: title,
    description: description,
    datasource: $.datasource,
    targets: targets,
    gridPos: pos,
    fieldConfig: {
      defaults: {
        unit: unit,
        custom: {
          stacking: { mode: if stack then 'normal' else 'none' },
          fillOpacity: if stack then 60 else 10,
        },
      },
      overrides: [],
    },
    options: { legend: { displayMode: 'table', placement: 'right', calcs: ['mean', 'max'] } },
  },

  heatmap(title, description, expr, pos={}, exemplar=false, native=null):: {
    type: 'heatmap',
    title: title,
    description: description,
    datasource: $.datasource,
    targets: [$.target(expr, '{{le}}', 'heatmap', exemplar, native)],
    gridPos: pos,
    options: {
      calculate: false,
      yAxis: { unit: 's' },
      cellGap: 1,
      color: { mode: 'scheme', scheme: 'Spectral', steps: 64 },
    },
  },

  stat(title, description, expr, unit='none', pos={}):: {
    type: 'stat',
    title: title,
    description: description,
    datasource: $.datasource,
    targets: [$.target(expr)],
    gridPos: pos,
    fieldConfig: { defaults: { unit: unit }, overrides: [] },
  },

  table(title, description, expr, pos={}):: {
    type: 'table',
    title: title,
    description: description,
    datasource: $.datasource,
    targets: [$.target(expr, '', 'table') + { instant: true }],
    gridPos: pos,
  },

  // Lays PANELS out left to right, WIDTH columns each, rows of HEIGHT, from row Y.
  layout(panels, y=0, width=12, height=8)::
    std.mapWithIndex(
      function(i, p) p { gridPos: $.grid((i * width) % 24, y + std.floor(i * width / 24) * height,
                                         width, height) },
      panels
    ),

  dashboard(uid, title, description, templates, panels):: {
    uid: uid,
    title: title,
    description: description,
    tags: ['cephscope', 'ceph'],
    editable: false,
    schemaVersion: 39,
    time: { from: 'now-1h', to: 'now' },
    refresh: '30s',
    timezone: 'browser',
    graphTooltip: 1,
    templating: { list: templates },
    annotations: { list: [] },
    links: [],
    panels: std.mapWithIndex(function(i, p) p { id: i + 1 }, panels),
  },
}
