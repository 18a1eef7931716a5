// SPDX-License-Identifier: Apache-2.0
// Reference side of tests/integration/hdr_java.sh: reads an .hlog with the
// Java HistogramLogReader and prints, per interval, the same line as
// `hdr_tool stats` (tag, start/end msec, count, min, max, percentiles
// 0/50/90/99/99.9/99.99/100, mean, stddev).
import java.util.Locale;
import org.HdrHistogram.EncodableHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogReader;

public class HdrCheck {
    public static void main(String[] args) throws Exception {
        HistogramLogReader reader = new HistogramLogReader(args[0]);
        EncodableHistogram e;
        while ((e = reader.nextIntervalHistogram()) != null) {
            Histogram h = (Histogram) e;
            StringBuilder sb = new StringBuilder();
            sb.append(h.getTag() == null ? "-" : h.getTag());
            sb.append(' ').append(h.getStartTimeStamp()).append(' ').append(h.getEndTimeStamp());
            sb.append(' ').append(h.getTotalCount()).append(' ').append(h.getMinValue()).append(' ').append(h.getMaxValue());
            for (double p : new double[] {0.0, 50.0, 90.0, 99.0, 99.9, 99.99, 100.0})
                sb.append(' ').append(h.getValueAtPercentile(p));
            sb.append(' ').append(String.format(Locale.US, "%.6f", h.getMean()));
            sb.append(' ').append(String.format(Locale.US, "%.6f", h.getStdDeviation()));
            System.out.println(sb);
        }
        reader.close();
    }
}
