//! From the interposer's raw records to the neutral output model: per-sample event values are
//! evaluated into the requested counters with the counter engine.

use std::collections::{BTreeMap, HashMap};

use rtl_pmc::dispatch::records::Record;
use rtl_pmc::passes::plan_file::{PlanEvent, RunPlan};
use rtl_pmc_counters::{Catalog, CounterKind, CounterSet, Topology};

use rtl_pmc_profile::model::{Agent, Counter, Dispatch};
use rtl_pmc_profile::store::database::KernelDerived;

/// A counter set resolved for one GPU and event group, with the position in the records of
/// each of its events.
struct Resolved {
    set: CounterSet,
    record_index: Vec<usize>,
    /// The index in [`Converter::sums`] of the GPUs of this architecture and sample counts
    /// collecting this group.
    sums: usize,
}

/// The samples of one event group summed per kernel over the dispatches of GPUs that share an
/// architecture and sample counts, so derived counters can be recomputed per kernel from
/// summed inputs.
struct Sums {
    /// A GPU and group whose resolved counter set evaluates these sums.
    agent: u32,
    group: u32,
    /// The architecture, group and per-event sample counts the sums are for.
    signature: (String, u32, Vec<usize>),
    /// Per kernel: the summed samples of each event and the dispatches summed.
    kernels: HashMap<String, KernelSums>,
}

/// The samples of each event summed over a kernel's dispatches, and how many were summed.
type KernelSums = (Vec<Vec<u64>>, u64);

/// Evaluates records of one run: resolves each (GPU, event group) once and remembers the GPUs
/// it saw.
pub struct Converter<'a> {
    plan: &'a RunPlan,
    catalogs: &'a [&'a Catalog],
    topologies: &'a HashMap<u32, Topology>,
    resolved: HashMap<(u32, u32), Result<Resolved, String>>,
    sums: Vec<Sums>,
    /// GPUs seen in records: node id → (index, gfx name).
    pub agents: BTreeMap<u32, (u32, String)>,
    /// Problems found, each reported once.
    pub warnings: Vec<String>,
}

fn same_event(plan: &PlanEvent, block_id: u32, event: u32, flags: u32) -> bool {
    plan.block_id == block_id && plan.event == event && plan.flags == flags
}

impl<'a> Converter<'a> {
    /// A converter for records of the run `plan`; `topologies` by KFD node id (the catalog's
    /// reference GPU stands in for a node without one).
    pub fn new(
        plan: &'a RunPlan,
        catalogs: &'a [&'a Catalog],
        topologies: &'a HashMap<u32, Topology>,
    ) -> Converter<'a> {
        Converter {
            plan,
            catalogs,
            topologies,
            resolved: HashMap::new(),
            sums: Vec::new(),
            agents: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }

    fn resolve(&mut self, arch: &str, node: u32, group: u32) -> Result<Resolved, String> {
        let agent_plan = self
            .plan
            .agents
            .iter()
            .find(|a| a.arch == arch)
            .ok_or_else(|| format!("GPU {node} ({arch}) is not in the plan of this run"))?;
        let group_plan = agent_plan.groups.get(group as usize).ok_or_else(|| {
            format!(
                "GPU {node} ({arch}): records name event group {group}, the plan has {}",
                agent_plan.groups.len()
            )
        })?;
        let catalog = self
            .catalogs
            .iter()
            .find(|c| c.arch() == arch)
            .ok_or_else(|| format!("no counter catalog for {arch}"))?;
        let topology = match self.topologies.get(&node) {
            Some(t) => t,
            None => {
                &catalog
                    .reference_gpu()
                    .ok_or_else(|| format!("GPU {node} ({arch}): topology unknown"))?
                    .topology
            }
        };
        let set = catalog
            .resolve(&group_plan.counters, topology)
            .map_err(|e| format!("GPU {node} ({arch}): {e}"))?;
        let record_index = set
            .events()
            .iter()
            .map(|e| {
                group_plan
                    .events
                    .iter()
                    .position(|p| same_event(p, e.event.block_id, e.event.event, e.event.flags))
                    .ok_or_else(|| {
                        format!(
                            "GPU {node} ({arch}): event {}:{} is not programmed in this run",
                            e.event.block, e.event.event
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let signature = (
            arch.to_string(),
            group,
            set.events().iter().map(|e| e.sample_count()).collect(),
        );
        let sums = match self.sums.iter().position(|s| s.signature == signature) {
            Some(at) => at,
            None => {
                self.sums.push(Sums {
                    agent: node,
                    group,
                    signature,
                    kernels: HashMap::new(),
                });
                self.sums.len() - 1
            }
        };
        Ok(Resolved {
            set,
            record_index,
            sums,
        })
    }

    fn counters(&mut self, record: &Record) -> Vec<Counter> {
        let Some(group) = record.group else {
            return Vec::new();
        };
        let key = (record.agent, group);
        if !self.resolved.contains_key(&key) {
            let resolved = self.resolve(&record.arch, record.agent, group);
            if let Err(e) = &resolved {
                self.warnings.push(e.clone());
            }
            self.resolved.insert(key, resolved);
        }
        let Some(Ok(resolved)) = self.resolved.get(&key) else {
            return Vec::new();
        };
        let samples: Option<Vec<&[u64]>> = resolved
            .record_index
            .iter()
            .zip(resolved.set.events())
            .map(|(&i, e)| {
                record
                    .counters
                    .get(i)
                    .filter(|v| v.len() == e.sample_count())
                    .map(Vec::as_slice)
            })
            .collect();
        if let Some(samples) = &samples {
            let sums = &mut self.sums[resolved.sums].kernels;
            if !sums.contains_key(&record.kernel) {
                let zero = samples.iter().map(|s| vec![0; s.len()]).collect();
                sums.insert(record.kernel.clone(), (zero, 0));
            }
            if let Some((summed, dispatches)) = sums.get_mut(&record.kernel) {
                for (sum, sample) in summed.iter_mut().zip(samples) {
                    for (s, v) in sum.iter_mut().zip(*sample) {
                        *s = s.saturating_add(*v);
                    }
                }
                *dispatches += 1;
            }
        }
        let evaluated = samples
            .ok_or_else(|| {
                format!(
                    "GPU {} ({}): dispatch {} of pid {} has sample counts that do not match the GPU's topology",
                    record.agent, record.arch, record.dispatch, record.pid
                )
            })
            .and_then(|samples| resolved.set.evaluate(&samples).map_err(|e| e.to_string()));
        match evaluated {
            Ok(values) => values
                .into_iter()
                .map(|v| Counter {
                    dimensions: v.shape.to_string(),
                    name: v.name,
                    total: v.total,
                    values: v.values,
                })
                .collect(),
            Err(e) => {
                if self.warnings.len() < 20 && !self.warnings.contains(&e) {
                    self.warnings.push(e);
                }
                Vec::new()
            }
        }
    }

    /// Per kernel, each derived counter of the run (pass `pass`) recomputed from its inputs
    /// summed over the kernel's dispatches (a ratio of sums, where per-dispatch values would be
    /// summed or averaged): one per kernel, counter and set of GPUs sharing a topology.
    pub fn derived_per_kernel(&self, pass: u32) -> Vec<KernelDerived> {
        let mut out = Vec::new();
        for sums in &self.sums {
            let Some(Ok(resolved)) = self.resolved.get(&(sums.agent, sums.group)) else {
                continue;
            };
            let Some(catalog) = self.catalogs.iter().find(|c| c.arch() == sums.signature.0) else {
                continue;
            };
            let mut kernels: Vec<(&String, &KernelSums)> = sums.kernels.iter().collect();
            kernels.sort_by(|a, b| a.0.cmp(b.0));
            for (kernel, (summed, dispatches)) in kernels {
                let Ok(values) = resolved.set.evaluate(summed) else {
                    continue;
                };
                for v in values {
                    let derived = catalog
                        .counter(&v.name)
                        .is_some_and(|c| matches!(c.kind, CounterKind::Derived { .. }));
                    if derived {
                        out.push(KernelDerived {
                            pass,
                            kernel: kernel.clone(),
                            counter: v.name,
                            value: v.total,
                            dispatches: *dispatches,
                        });
                    }
                }
            }
        }
        out
    }

    /// The dispatch of `record`, with its counters evaluated.
    pub fn convert(&mut self, record: &Record) -> Dispatch {
        self.agents
            .entry(record.agent)
            .or_insert_with(|| (record.gpu_index, record.arch.clone()));
        Dispatch {
            pid: record.pid,
            tid: record.tid,
            agent: record.agent,
            queue_id: record.queue,
            queue_order: record.queue_order,
            queue_index: record.queue_index,
            dispatch_id: record.dispatch,
            correlation_id: record.correlation,
            kernel: record.kernel.clone(),
            kernel_object: record.kernel_object,
            kernel_id: record.kernel_id,
            grid: record.grid,
            workgroup: record.workgroup,
            lds: record.lds,
            scratch: record.scratch,
            arch_vgpr: record.arch_vgpr,
            accum_vgpr: record.accum_vgpr,
            sgpr: record.sgpr,
            wave_size: record.wave_size,
            signal: record.signal,
            start_ns: record.start,
            end_ns: record.end,
            counters: self.counters(record),
        }
    }

    /// The GPUs seen, described with what `known` says about them.
    pub fn seen_agents(&self, known: &[Agent]) -> Vec<Agent> {
        self.agents
            .iter()
            .map(|(&node, (index, arch))| {
                known
                    .iter()
                    .find(|a| a.node_id == node)
                    .cloned()
                    .unwrap_or_else(|| Agent {
                        node_id: node,
                        gpu_index: *index,
                        name: arch.clone(),
                        ..Agent::default()
                    })
            })
            .collect()
    }
}
