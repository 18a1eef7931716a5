// SPDX-License-Identifier: Apache-2.0
// A JVM whose heap grows and shrinks: worker threads allocate and drop
// arrays, System.gc() after each round lets G1 shrink (MaxHeapFreeRatio)
// and uncommit the freed regions while the other threads run.
import java.util.ArrayList;
import java.util.List;

public class BlameChurn {
  static volatile long sink;

  public static void main(String[] args) throws Exception {
    int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 20;
    int mib = args.length > 1 ? Integer.parseInt(args[1]) : 96;
    int threads = 2;
    for (int r = 0; r < rounds; r++) {
      Thread[] ts = new Thread[threads];
      for (int t = 0; t < threads; t++) {
        ts[t] = new Thread(() -> {
          List<byte[]> keep = new ArrayList<>();
          for (int i = 0; i < mib / threads; i++) {
            byte[] b = new byte[1 << 20];
            for (int k = 0; k < b.length; k += 4096) b[k] = (byte) k;
            keep.add(b);
          }
          long s = 0;
          for (byte[] b : keep) s += b[4096];
          sink += s;
        });
        ts[t].start();
      }
      for (Thread t : ts) t.join();
      System.gc();
    }
    System.out.println("rounds=" + rounds + " mib=" + mib + " sink=" + sink);
  }
}
