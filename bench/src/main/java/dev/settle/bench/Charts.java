package dev.settle.bench;

import org.HdrHistogram.Histogram;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CategoryPlot;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.chart.plot.ValueMarker;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.category.LineAndShapeRenderer;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.data.category.DefaultCategoryDataset;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** PNG charts of the run (headless): latency distributions as percentile curves, and XY plots. */
final class Charts {
    static final double[] PERCENTILES = {50, 75, 90, 95, 99, 99.9, 100};
    private static final String[] LABELS = {"p50", "p75", "p90", "p95", "p99", "p99.9", "max"};

    private Charts() {}

    /** One curve per histogram: the latency (ms, log scale) at p50 … max. */
    static void percentiles(Path file, String title, String yLabel, Map<String, Histogram> series, Double goalMs)
            throws IOException {
        DefaultCategoryDataset ds = new DefaultCategoryDataset();
        series.forEach((name, h) -> {
            if (h.getTotalCount() == 0) {
                return;
            }
            for (int i = 0; i < PERCENTILES.length; i++) {
                double v = (PERCENTILES[i] == 100 ? h.getMaxValue() : h.getValueAtPercentile(PERCENTILES[i])) / 1000.0;
                ds.addValue(Math.max(0.01, v), name, LABELS[i]);
            }
        });
        JFreeChart chart = ChartFactory.createLineChart(
                title, "percentile", yLabel, ds, PlotOrientation.VERTICAL, true, false, false);
        CategoryPlot plot = chart.getCategoryPlot();
        LogAxis axis = new LogAxis(yLabel);
        axis.setSmallestValue(0.01);
        axis.setNumberFormatOverride(new java.text.DecimalFormat("#,##0.#"));
        plot.setRangeAxis(axis);
        LineAndShapeRenderer r = (LineAndShapeRenderer) plot.getRenderer();
        r.setDefaultShapesVisible(true);
        for (int i = 0; i < ds.getRowCount(); i++) {
            r.setSeriesStroke(i, new BasicStroke(2f));
        }
        if (goalMs != null) {
            ValueMarker m = new ValueMarker(goalMs, Color.RED, new BasicStroke(1.5f));
            m.setLabel("goal " + Math.round(goalMs) + " ms");
            m.setLabelAnchor(org.jfree.chart.ui.RectangleAnchor.TOP_LEFT);
            m.setLabelTextAnchor(org.jfree.chart.ui.TextAnchor.BOTTOM_LEFT);
            plot.addRangeMarker(m);
        }
        style(chart);
        ChartUtils.saveChartAsPNG(file.toFile(), chart, 800, 450);
    }

    /** XY lines; {@code markers} draws horizontal reference lines (name → y). */
    static void xy(
            Path file,
            String title,
            String xLabel,
            String yLabel,
            Map<String, List<double[]>> series,
            Map<String, Double> markers)
            throws IOException {
        XYSeriesCollection ds = new XYSeriesCollection();
        series.forEach((name, points) -> {
            XYSeries s = new XYSeries(name, false);
            points.forEach(p -> s.add(p[0], p[1]));
            ds.addSeries(s);
        });
        JFreeChart chart =
                ChartFactory.createXYLineChart(title, xLabel, yLabel, ds, PlotOrientation.VERTICAL, true, false, false);
        XYPlot plot = chart.getXYPlot();
        XYLineAndShapeRenderer r =
                new XYLineAndShapeRenderer(true, series.values().stream().allMatch(p -> p.size() < 30));
        for (int i = 0; i < ds.getSeriesCount(); i++) {
            r.setSeriesStroke(i, new BasicStroke(2f));
        }
        plot.setRenderer(r);
        ((NumberAxis) plot.getRangeAxis()).setAutoRangeIncludesZero(true);
        Color[] colors = {Color.RED, new Color(0, 128, 0), Color.MAGENTA};
        int c = 0;
        for (Map.Entry<String, Double> m : markers.entrySet()) {
            ValueMarker marker = new ValueMarker(m.getValue(), colors[c++ % colors.length], new BasicStroke(1.5f));
            marker.setLabel(m.getKey());
            marker.setLabelAnchor(org.jfree.chart.ui.RectangleAnchor.TOP_LEFT);
            marker.setLabelTextAnchor(org.jfree.chart.ui.TextAnchor.BOTTOM_LEFT);
            plot.addRangeMarker(marker);
        }
        style(chart);
        ChartUtils.saveChartAsPNG(file.toFile(), chart, 800, 450);
    }

    private static void style(JFreeChart chart) {
        chart.setBackgroundPaint(Color.WHITE);
        chart.getPlot().setBackgroundPaint(new Color(250, 250, 250));
    }
}
