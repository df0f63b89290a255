// Generates tests/data/*.tsv: `javac Oracle.java && java Oracle` in a directory holding
// doubles.txt (one input per line, \t and \\ escaped) and maps.txt (space-separated keys);
// java_hashmaps.tsv is `paste maps.txt maps.out`.
import java.io.*;
import java.nio.file.*;
import java.util.*;
public class Oracle {
  static String unesc(String s){ return s.replace("\\t","\t").replace("\\\\","\\"); }
  public static void main(String[] a) throws Exception {
    try (PrintWriter out = new PrintWriter("doubles.out","UTF-8")) {
      for (String line : Files.readAllLines(Paths.get("doubles.txt"))) {
        String s = unesc(line);
        String r;
        try {
          double d = Double.parseDouble(s);
          if ((float) d == d) {
            float f = Float.parseFloat(s);
            r = Float.isInfinite(f)||Float.isNaN(f) ? "NOTFINITE " + f : String.format("F32 %08x", Float.floatToRawIntBits(f));
          } else {
            r = Double.isInfinite(d)||Double.isNaN(d) ? "NOTFINITE " + d : String.format("F64 %016x", Double.doubleToRawLongBits(d));
          }
        } catch (NumberFormatException e) { r = "NFE " + e.getMessage(); }
        out.println(line + "\t" + r.replace("\t","\\t"));
      }
    }
    try (PrintWriter out = new PrintWriter("maps.out","UTF-8")) {
      for (String line : Files.readAllLines(Paths.get("maps.txt"))) {
        HashMap<String,String> m = new HashMap<>();
        int i = 0;
        for (String k : line.split(" ")) m.put(k, "v" + (i++));
        out.println(m.toString());
      }
    }
    try (PrintWriter out = new PrintWriter("letters.out","UTF-8")) {
      int start=-1;
      for (int c=0;c<=0x10000;c++){
        boolean l = c<=0xFFFF && Character.isLetter((char)c);
        if (l && start<0) start=c;
        if (!l && start>=0){ out.println(start+" "+(c-1)); start=-1; }
      }
    }
  }
}
