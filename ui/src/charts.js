// The chart library (Apache ECharts), loaded only by the pages that draw: the memories page
// does not download it. Only the chart kinds used are bundled.
import * as echarts from 'echarts/core';
import { BarChart, GraphChart, HeatmapChart, LineChart } from 'echarts/charts';
import {
  AriaComponent, GridComponent, LegendComponent, TooltipComponent, VisualMapComponent,
} from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';

echarts.use([
  BarChart, GraphChart, HeatmapChart, LineChart, AriaComponent, GridComponent, LegendComponent,
  TooltipComponent, VisualMapComponent, CanvasRenderer,
]);

// Draws `option` into `el`; returns a function that updates it and one that disposes it.
export function draw(el, option) {
  const chart = echarts.init(el, null, { renderer: 'canvas' });
  chart.setOption({ aria: { enabled: true }, animation: false, ...option });
  const resize = () => chart.resize();
  addEventListener('resize', resize);
  return {
    chart,
    update: (o) => chart.setOption({ aria: { enabled: true }, animation: false, ...o }, true),
    dispose: () => {
      removeEventListener('resize', resize);
      chart.dispose();
    },
  };
}
