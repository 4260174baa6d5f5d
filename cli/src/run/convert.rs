//! From the interposer's raw records to the neutral output model: per-sample event values are
//! evaluated into the requested counters with the counter engine.

use std::collections::{BTreeMap, HashMap};

use rtl_pmc::dispatch::records::Record;
use rtl_pmc::passes::plan_file::{PlanEvent, RunPlan};
use rtl_pmc_counters::{Catalog, CounterSet, Topology};

use crate::output::model::{Agent, Counter, Dispatch};

/// A counter set resolved for one GPU and event group, with the position in the records of
/// each of its events.
struct Resolved {
    set: CounterSet,
    record_index: Vec<usize>,
}

/// Evaluates records of one run: resolves each (GPU, event group) once and remembers the GPUs
/// it saw.
pub struct Converter<'a> {
    plan: &'a RunPlan,
    catalogs: &'a [&'a Catalog],
    topologies: &'a HashMap<u32, Topology>,
    resolved: HashMap<(u32, u32), Result<Resolved, String>>,
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
            agents: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }

    fn resolve(&self, arch: &str, node: u32, group: u32) -> Result<Resolved, String> {
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
        Ok(Resolved { set, record_index })
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
