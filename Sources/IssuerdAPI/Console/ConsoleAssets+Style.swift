extension ConsoleAssets {
    /// `/console/assets/console.css`.
    static let stylesheet = #"""
        :root {
          --bg: #f4f6f9; --panel: #ffffff; --ink: #1c2430; --muted: #6b7686; --line: #e3e7ee; --accent: #2f5bd3;
          --green: #1f9d55; --green-bg: #e3f5eb; --yellow: #c98a00; --yellow-bg: #fff4d6; --orange: #e0561b; --orange-bg: #fde8de;
          --shadow: #7c4dcc; --shadow-bg: #efe7fb; --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
        }
        * { box-sizing: border-box; }
        body { margin: 0; background: var(--bg); color: var(--ink); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
        a { color: var(--accent); text-decoration: none; }
        a:hover { text-decoration: underline; }
        .muted { color: var(--muted); font-weight: 400; }
        .mono { font-family: var(--mono); font-size: 12.5px; }
        header.top { display: flex; align-items: center; gap: 24px; padding: 0 24px; height: 52px; background: #141b2d; color: #fff; }
        header.top .brand { color: #fff; font-weight: 650; font-size: 16px; white-space: nowrap; }
        header.top .brand .muted { color: #9aa6bd; }
        .logo { color: #6f9bff; }
        #nav { display: flex; gap: 4px; flex: 1; }
        #nav a { color: #c5cee0; padding: 6px 12px; border-radius: 6px; }
        #nav a.active, #nav a:hover { background: #26304a; color: #fff; text-decoration: none; }
        #who { display: flex; align-items: center; gap: 12px; color: #c5cee0; white-space: nowrap; }
        #who button { background: transparent; border: 1px solid #3b4764; color: #dfe6f3; }
        main { max-width: 1280px; margin: 0 auto; padding: 24px; }
        h1 { font-size: 22px; margin: 0 0 4px; }
        h2 { font-size: 16px; margin: 0 0 12px; }
        .sub { color: var(--muted); margin-bottom: 20px; }
        .panel { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 18px 20px; margin-bottom: 20px; }
        .tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 14px; margin-bottom: 20px; }
        .tile { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; }
        .tile .label { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
        .tile .value { font-size: 22px; font-weight: 650; margin-top: 2px; word-break: break-all; }
        .tile .value.small { font-size: 14px; font-weight: 500; }
        .tile.wide { grid-column: span 2; }
        .tile .value.mono { font-size: 12.5px; }
        .tile.green { border-top: 3px solid var(--green); } .tile.yellow { border-top: 3px solid var(--yellow); } .tile.orange { border-top: 3px solid var(--orange); }
        table { width: 100%; border-collapse: collapse; }
        th { text-align: left; font-weight: 600; color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .03em; padding: 8px 10px; border-bottom: 1px solid var(--line); }
        td { padding: 8px 10px; border-bottom: 1px solid var(--line); vertical-align: top; }
        tr:last-child td { border-bottom: none; }
        td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
        .badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 600; }
        .badge.green { color: var(--green); background: var(--green-bg); }
        .badge.yellow { color: var(--yellow); background: var(--yellow-bg); }
        .badge.orange { color: var(--orange); background: var(--orange-bg); }
        .badge.live { color: #1d4ed8; background: #e0e9ff; }
        .badge.shadow { color: var(--shadow); background: var(--shadow-bg); }
        .badge.builtin { color: var(--muted); background: #eceff4; }
        form.filters, .filters { display: flex; flex-wrap: wrap; align-items: flex-end; gap: 12px; }
        label { display: flex; flex-direction: column; gap: 4px; font-size: 12px; color: var(--muted); }
        input, select, textarea, button { font: inherit; color: var(--ink); }
        input, select, textarea { border: 1px solid #cfd6e1; border-radius: 6px; padding: 7px 9px; background: #fff; }
        textarea { width: 100%; min-height: 160px; font-family: var(--mono); font-size: 12.5px; }
        button { border: 1px solid var(--accent); background: var(--accent); color: #fff; border-radius: 6px; padding: 7px 14px; cursor: pointer; font-weight: 600; }
        button.secondary { background: #fff; color: var(--accent); }
        button:disabled { opacity: .6; cursor: progress; }
        .error { background: var(--orange-bg); border: 1px solid #f3b79c; color: #8a2d07; border-radius: 8px; padding: 12px 14px; margin-bottom: 16px; }
        .notice { background: #e8efff; border: 1px solid #bcd0ff; color: #1f3d8a; border-radius: 8px; padding: 10px 14px; margin-bottom: 16px; }
        .ok { color: var(--green); font-weight: 600; }
        pre.diag { background: #1b2233; color: #f3f5f9; padding: 12px; border-radius: 8px; overflow-x: auto; font-size: 12.5px; }
        .chart svg { width: 100%; height: auto; display: block; }
        .legend { display: flex; gap: 16px; font-size: 12px; color: var(--muted); margin-top: 8px; }
        .legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 5px; vertical-align: -1px; }
        .legend .green, .bar.green { fill: var(--green); background: var(--green); }
        .legend .yellow, .bar.yellow { fill: #f0b429; background: #f0b429; }
        .legend .orange, .bar.orange { fill: var(--orange); background: var(--orange); }
        .axis { fill: var(--muted); font-size: 11px; }
        .grid { stroke: var(--line); }
        .spark { stroke: var(--accent); fill: none; stroke-width: 1.5; }
        .spark.shadow { stroke: var(--shadow); }
        .two { display: grid; grid-template-columns: 1fr 1fr; gap: 20px; }
        @media (max-width: 900px) { .two { grid-template-columns: 1fr; } }
        .signin { max-width: 420px; margin: 80px auto; }
        .signin input { width: 100%; }
        .signin form { display: flex; flex-direction: column; gap: 14px; }
        form.panel > .filters { margin-bottom: 16px; }
        .file { border: 1px solid var(--line); border-radius: 8px; padding: 12px; margin-bottom: 12px; }
        .file .row { display: flex; gap: 10px; align-items: center; margin-bottom: 8px; }
        .file .row input { flex: 1; }
        .kv { display: grid; grid-template-columns: 180px 1fr; gap: 6px 14px; }
        .kv div:nth-child(odd) { color: var(--muted); }
        .arrow { color: var(--muted); padding: 0 6px; }
        .delta { font-weight: 600; }
        .nowrap { white-space: nowrap; }
        details summary { cursor: pointer; color: var(--accent); }
        """#
}
